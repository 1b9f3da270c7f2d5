"""Share pages, services and API (the config files themselves are proven on the lab): what is saved, what is
refused with the field named, and that a Samba password never lands in the database, an operation or the audit."""

import pytest
from django.utils import timezone

from appliance.models import AuditEntry, Operation
from pools.models import Dataset, Pool
from shares import services as share_services
from shares.models import NfsExport, SambaUser, SmbShare
from tests.support.pages import shown_again

SMB = {
    "name": "docs",
    "dataset": "tank/docs",
    "preset": "general",
    "browseable": "on",
    "previous_versions": "on",
    "snapshot_prefix": "auto",
}
NFS = {"dataset": "tank/docs", "clients": "10.0.0.0/24", "squash": "root_squash", "sec": "sys"}


@pytest.fixture
def tank(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    for name, mp in (("tank", "/tank"), ("tank/docs", "/tank/docs"), ("tank/nomount", "none")):
        Dataset.objects.create(
            host=local_host,
            pool=pool,
            name=name,
            type="filesystem",
            depth=name.count("/"),
            mountpoint=mp,
            properties={"mountpoint": {"value": mp, "source": "default", "from": ""}},
            observed_at=now,
        )
    return pool


def test_creating_an_smb_share_saves_it_and_queues_one_apply(admin_client, tank, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = admin_client.post("/shares/smb/new/", SMB)
    op = Operation.objects.get()
    assert response.status_code == 302 and op.kind == "shares.apply" and op.target == "host:local:shares"
    share = SmbShare.objects.get()
    assert (share.name, share.path, share.guest_ok) == ("docs", "/tank/docs", False)
    page = admin_client.get("/shares/").content.decode()
    assert "docs" in page and "/tank/docs" in page


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"name": "docs]\n[x"}, "name", "letters, digits"),
        ({"comment": "a\nroot preexec = id"}, "comment", "without newlines"),
        ({"valid_users": "alice %U"}, "valid_users", "Not user"),
        ({"dataset": "tank/nomount"}, "dataset", "not mounted"),
        ({"hosts_allow": "10.0.0.0/8;rm"}, "hosts_allow", "Not addresses"),
    ],
)
def test_a_bad_share_names_the_field_and_changes_nothing(admin_client, tank, changes, field, message):
    response = admin_client.post("/shares/smb/new/", {**SMB, **changes})
    assert message in shown_again(response, "share-form")
    errors = response.context["form"].errors
    assert message in " ".join(errors.get(field, [])), errors
    assert not SmbShare.objects.exists() and not Operation.objects.exists()


def test_share_names_collide_ignoring_case(admin_client, tank, django_capture_on_commit_callbacks):
    SmbShare.objects.create(host=tank.host, name="Docs", dataset="tank/docs", path="/tank/docs")
    response = admin_client.post("/shares/smb/new/", SMB)
    assert "ignore case" in " ".join(response.context["form"].errors["name"])


def test_nfs_to_everyone_and_async_need_confirmation(admin_client, tank, django_capture_on_commit_callbacks):
    response = admin_client.post("/shares/nfs/new/", {**NFS, "clients": "*"})
    assert "confirmation" in " ".join(response.context["form"].errors["wildcard_ok"])
    response = admin_client.post("/shares/nfs/new/", {**NFS, "async_writes": "on"})
    assert "confirmation" in " ".join(response.context["form"].errors["async_ok"])
    response = admin_client.post("/shares/nfs/new/", {**NFS, "clients": "10.0.0.1(rw,no_root_squash)"})
    assert "not a host name" in " ".join(response.context["form"].errors["clients"])
    assert not NfsExport.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        admin_client.post("/shares/nfs/new/", {**NFS, "clients": "*", "wildcard_ok": "on"})
    assert NfsExport.objects.get().client_list == ["*"]


def test_a_shared_pool_or_dataset_is_not_destroyed_or_exported(admin_client, tank):
    SmbShare.objects.create(host=tank.host, name="docs", dataset="tank/docs", path="/tank/docs")
    for url, form in (
        (f"/pools/{tank.pk}/destroy/", {"confirm": "tank"}),
        (f"/pools/{tank.pk}/export/", {}),
        (f"/pools/datasets/{Dataset.objects.get(name='tank/docs').pk}/destroy/", {"confirm": "tank/docs"}),
    ):
        page = admin_client.post(url, form, follow=True).content.decode()
        assert "in use by SMB share docs" in page, url
    assert not Operation.objects.exists()


def test_a_samba_password_goes_only_to_the_queued_task(admin_client, tank, django_capture_on_commit_callbacks):
    password = "correct-horse-battery"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        admin_client.post("/shares/users/add/", {"username": "alice", "password": password})
    op = Operation.objects.get()
    assert op.kind == "shares.samba_user_add" and op.params == {"action": "add", "username": "alice"}
    assert len(callbacks) == 1
    stored = repr(list(Operation.objects.values())) + repr(list(AuditEntry.objects.values()))
    assert password not in stored
    bad = admin_client.post("/shares/users/add/", {"username": "Root", "password": "long-enough-1"})
    assert "lower-case" in bad.content.decode() and Operation.objects.count() == 1


def test_a_users_row_cannot_add_one_only_the_add_form_can(admin_client, tank):
    page = admin_client.post(
        "/shares/users/", {"action": "add", "username": "eve", "password": "long-enough-1"}, follow=True
    )
    assert "add a user with the form" in page.content.decode()
    assert not Operation.objects.exists()


def test_operators_may_not_manage_users_or_server_settings(operator_client, tank):
    assert operator_client.post("/shares/users/", {"action": "add"}).status_code == 403
    assert operator_client.post("/shares/users/add/", {}).status_code == 403
    assert operator_client.post("/shares/settings/", {}).status_code == 403


def test_the_api_manages_shares_and_users(admin_client, tank, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        created = admin_client.post(
            "/api/v1/smb-shares/",
            {"host": "local", "name": "docs", "dataset": "tank/docs"},
            content_type="application/json",
        )
    assert created.status_code == 202, created.content
    share = SmbShare.objects.get()
    Operation.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=False):
        patched = admin_client.patch(
            f"/api/v1/smb-shares/{share.pk}/", {"read_only": True}, content_type="application/json"
        )
    assert patched.status_code == 202 and SmbShare.objects.get().read_only
    bad = admin_client.patch(f"/api/v1/smb-shares/{share.pk}/", {"comment": "x\n[y]"}, content_type="application/json")
    assert bad.status_code == 400 and "comment" in bad.json()
    assert admin_client.get("/api/v1/smb-shares/?host=local").json()["results"][0]["path"] == "/tank/docs"
    nfs = admin_client.post(
        "/api/v1/nfs-exports/", {"host": "local", **NFS, "clients": "*"}, content_type="application/json"
    )
    assert nfs.status_code == 400 and "wildcard_ok" in nfs.json()
    Operation.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=False):
        user = admin_client.post(
            "/api/v1/samba-users/",
            {"host": "local", "username": "bob", "password": "long-enough-1"},
            content_type="application/json",
        )
    assert user.status_code == 202 and "long-enough-1" not in user.content.decode()
    settings = admin_client.patch(
        "/api/v1/share-settings/local/", {"smb_min_protocol": "SMB1"}, content_type="application/json"
    )
    assert settings.status_code == 400 and "smb_min_protocol" in settings.json()
    assert admin_client.get("/api/v1/share-settings/local/").json()["smb_min_protocol"] == "SMB2"
    gone = admin_client.delete(f"/api/v1/smb-shares/{share.pk}/", {"confirm": "nope"}, content_type="application/json")
    assert gone.status_code == 400 and "confirm" in gone.json()
    assert SambaUser.objects.count() == 0  # created by the worker once smbpasswd succeeded, not before


def test_the_share_form_can_create_its_dataset_with_the_presets_properties(
    admin_client, tank, django_capture_on_commit_callbacks
):
    form = {**SMB, "name": "team", "dataset": "", "new_dataset": "tank/team", "preset": "multi_user"}
    with django_capture_on_commit_callbacks(execute=False):
        response = admin_client.post("/shares/smb/new/", form)
    assert response.status_code == 302, response.context["form"].errors
    op = Operation.objects.get()
    assert op.params["create"] == [["zfs", "create", "-o", "xattr=sa", "-o", "acltype=posix", "--", "tank/team"]]
    assert op.params["folder"] == "/tank/team"  # made 2775 root:users by the helper, never through a link
    share = SmbShare.objects.get()
    assert (share.dataset, share.path) == ("tank/team", "/tank/team")
    taken = admin_client.post("/shares/smb/new/", {**form, "name": "other", "new_dataset": "tank/docs"})
    assert "exists already" in " ".join(taken.context["form"].errors["new_dataset"])
    neither = admin_client.post("/shares/smb/new/", {**form, "name": "x", "new_dataset": ""})
    assert "Choose a dataset" in " ".join(neither.context["form"].errors["dataset"])


def test_a_shares_folder_owner_and_mode_are_set_by_one_admin_operation(
    admin_client, operator_client, tank, django_capture_on_commit_callbacks
):
    share = SmbShare.objects.create(host=tank.host, name="docs", dataset="tank/docs", path="/tank/docs")
    SambaUser.objects.create(host=tank.host, username="alice")
    page = admin_client.get(f"/shares/smb/{share.pk}/").content.decode()
    assert 'id="folder"' in page and '<option value="alice">' in page and "0700 — owner only" in page
    url = f"/shares/smb/{share.pk}/folder/"
    assert operator_client.post(url, {"owner": "alice", "group": "users", "mode": "0700"}).status_code == 403
    for bad in ({"owner": "mallory"}, {"group": "wheel"}, {"mode": "0777"}, {"owner": "-rf"}):
        admin_client.post(url, {"owner": "alice", "group": "users", "mode": "0700", **bad})
    api = admin_client.post(
        f"/api/v1/smb-shares/{share.pk}/folder/",
        {"owner": "mallory", "group": "users", "mode": "0700"},
        content_type="application/json",
    )
    assert api.status_code == 400 and "owner" in api.json()
    assert not Operation.objects.exists()  # every refusal above named its field and queued nothing
    with django_capture_on_commit_callbacks(execute=False):
        admin_client.post(url, {"owner": "alice", "group": "alice", "mode": "2770"})
    op = Operation.objects.get()
    assert (op.kind, op.target) == ("shares.folder", "host:local:smb-share:docs")
    assert op.params == {"path": "/tank/docs", "owner": "alice", "group": "alice", "mode": "2770"}


def test_a_refused_folder_form_stays_open_on_the_shares_page_with_the_error_under_its_field(admin_client, tank):
    """The form's own refusal and the service's come back on the share's page (400), the folder form bound with the
    error inside it, the share's own form as on GET; nothing queued."""
    share = SmbShare.objects.create(host=tank.host, name="docs", dataset="tank/docs", path="/tank/docs", comment="Docs")
    url = f"/shares/smb/{share.pk}/folder/"

    page = admin_client.post(url, {"owner": "mallory", "group": "users", "mode": "0700"})
    form = shown_again(page, "folder")
    assert "Select a valid choice. mallory" in form, form
    assert 'value="0700" selected' in form  # the rest as posted
    html = page.content.decode()
    assert 'value="Docs"' in html and "is required" not in html  # the share's form unbound, as on GET
    SmbShare.objects.filter(pk=share.pk).update(path="/tank/docs/../etc")  # what the service refuses, not the form
    form = shown_again(admin_client.post(url, {"owner": "root", "group": "users", "mode": "0700"}), "folder")
    assert "no .., no spaces" in form, form
    assert not Operation.objects.exists()


@pytest.mark.parametrize(
    "clients, field, message",
    [
        ("0.0.0.0/0", "wildcard_ok", "confirmation"),
        ("::/0", "wildcard_ok", "confirmation"),
        ("*.*", "wildcard_ok", "confirmation"),
        ("?*", "wildcard_ok", "confirmation"),
        ("10.0.0.0/4", "wildcard_ok", "confirmation"),  # a very short prefix is as good as everyone
        ("10.0.0.0/0", "clients", "matches every address"),
        ("10.0.0.5/33", "clients", "not an address or a network"),
        ("256.1.1.1", "clients", "not an address or a network"),
        ("\n".join(f"10.1.{i // 250}.{i % 250}" for i in range(257)), "clients", "At most 256"),
    ],
)
def test_nfs_clients_are_parsed_and_everyone_needs_confirmation(admin_client, tank, clients, field, message):
    response = admin_client.post("/shares/nfs/new/", {**NFS, "clients": clients})
    assert message in " ".join(response.context["form"].errors[field]), response.context["form"].errors
    assert not NfsExport.objects.exists() and not Operation.objects.exists()


@pytest.mark.parametrize("changes", [{"squash": "no_root_squash"}, {"anonuid": "0"}, {"anongid": "0"}])
def test_client_root_as_root_needs_confirmation_and_an_admin(
    admin_client, operator_client, tank, django_capture_on_commit_callbacks, changes
):
    form = {**NFS, **changes}
    response = admin_client.post("/shares/nfs/new/", form)
    assert "confirmation" in " ".join(response.context["form"].errors["root_ok"])
    response = operator_client.post("/shares/nfs/new/", {**form, "root_ok": "on"})
    assert "Only an admin" in " ".join(response.context["form"].errors["squash"])
    api = operator_client.post(
        "/api/v1/nfs-exports/", {"host": "local", **form, "root_ok": True}, content_type="application/json"
    )
    assert api.status_code == 400 and "squash" in api.json()
    assert not NfsExport.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        admin_client.post("/shares/nfs/new/", {**form, "root_ok": "on"})
    assert NfsExport.objects.count() == 1


def test_deleting_a_samba_user_or_an_export_needs_its_name_typed(
    admin_client, tank, django_capture_on_commit_callbacks
):
    user = SambaUser.objects.create(host=tank.host, username="alice")
    export = NfsExport.objects.create(host=tank.host, dataset="tank/docs", path="/tank/docs", clients="10.0.0.0/24")
    page = admin_client.post(
        "/shares/users/", {"action": "delete", "username": "alice", "confirm": "alic"}, follow=True
    )
    assert "Type the user&#x27;s name (alice)" in page.content.decode()
    api = admin_client.delete(f"/api/v1/samba-users/{user.pk}/", {}, content_type="application/json")
    assert api.status_code == 400 and "confirm" in api.json()
    api = admin_client.delete(
        f"/api/v1/nfs-exports/{export.pk}/", {"confirm": "/tank"}, content_type="application/json"
    )
    assert api.status_code == 400 and "confirm" in api.json()
    assert not Operation.objects.exists() and NfsExport.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        admin_client.post(f"/shares/nfs/{export.pk}/delete/", {"confirm": "/tank/docs"})
        admin_client.post("/shares/users/", {"action": "delete", "username": "alice", "confirm": "alice"})
    assert not NfsExport.objects.exists() and Operation.objects.count() == 2


def test_a_share_saved_by_another_request_a_moment_ago_is_a_field_error(admin_client, tank, monkeypatch):
    """Two requests for Docs and DOCS pass the name check together; the later save meets the constraint."""
    render = share_services.shares_render

    def the_other_request_saves_meanwhile(*args, **kwargs):
        SmbShare.objects.get_or_create(host=tank.host, name="DOCS", dataset="tank/docs", path="/tank/docs")
        return render(*args, **kwargs)

    monkeypatch.setattr(share_services, "shares_render", the_other_request_saves_meanwhile)
    response = admin_client.post("/api/v1/smb-shares/", {"host": "local", **SMB}, content_type="application/json")
    assert response.status_code == 400 and "names ignore case" in response.json()["name"][0]
    assert not Operation.objects.exists()
