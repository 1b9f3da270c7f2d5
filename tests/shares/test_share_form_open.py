"""A share's or an export's own page, and the shares page's form for a new Samba user, posted and refused (the
form's check or the service's), answer 400 with the form shown again as posted and each error under the field it
names; nothing is saved or queued."""

import pytest
from django.utils import timezone

from appliance.models import Operation
from pools.models import Dataset, Pool
from shares.models import NfsExport, SambaUser, SmbShare
from tests.support.pages import shown_again

SMB = {"name": "media", "dataset": "tank/media", "preset": "general", "snapshot_prefix": "auto"}
NFS = {"dataset": "tank/media", "clients": "10.0.0.0/24", "squash": "root_squash", "sec": "sys"}


@pytest.fixture
def tank(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    for name in ("tank/docs", "tank/media"):
        Dataset.objects.create(
            host=local_host, pool=pool, name=name, type="filesystem", mountpoint=f"/{name}", observed_at=now
        )
    return pool


def _field(form: str, name: str) -> str:
    """The part of a shown-again form from the field's input to the next field: where its error must be."""
    return form.split(f'name="{name}"', 1)[1].split('<div class="field', 1)[0]


@pytest.mark.parametrize(
    ("path", "posted", "form_id", "field", "said"),
    [
        ("smb/new/", {**SMB, "name": ""}, "share-form", "name", "This field is required."),  # the form's
        ("smb/new/", {**SMB, "hosts_allow": "10.0.0.0/8;rm"}, "share-form", "hosts_allow", "Not addresses"),
        ("smb/new/", {**SMB, "name": "DOCS"}, "share-form", "name", "names ignore case"),  # the service's
        ("smb/{smb}/", {**SMB, "comment": "a\nroot preexec = id"}, "share-form", "comment", "without newlines"),
        ("nfs/new/", {**NFS, "clients": "256.1.1.1"}, "export-form", "clients", "not an address or a network"),
        ("nfs/new/", {**NFS, "dataset": "tank/docs"}, "export-form", "dataset", "is exported already"),
        ("nfs/{nfs}/", {**NFS, "clients": "*"}, "export-form", "wildcard_ok", "confirmation"),
    ],
)
def test_a_refused_share_or_export_is_a_400_with_the_error_under_its_field(
    admin_client, tank, path, posted, form_id, field, said
):
    smb = SmbShare.objects.create(host=tank.host, name="docs", dataset="tank/docs", path="/tank/docs")
    nfs = NfsExport.objects.create(host=tank.host, dataset="tank/docs", path="/tank/docs", clients="10.0.0.0/24")
    before = list(SmbShare.objects.values()), list(NfsExport.objects.values())
    form = shown_again(admin_client.post(f"/shares/{path.format(smb=smb.pk, nfs=nfs.pk)}", posted), form_id)
    assert said in _field(form, field), form
    assert f'value="{posted["dataset"]}" selected' in form  # the rest as posted
    assert (list(SmbShare.objects.values()), list(NfsExport.objects.values())) == before
    assert not Operation.objects.exists()


def test_the_pages_themselves_are_a_200(admin_client, tank):
    smb = SmbShare.objects.create(host=tank.host, name="docs", dataset="tank/docs", path="/tank/docs")
    nfs = NfsExport.objects.create(host=tank.host, dataset="tank/docs", path="/tank/docs", clients="10.0.0.0/24")
    for path in ("smb/new/", f"smb/{smb.pk}/", "nfs/new/", f"nfs/{nfs.pk}/"):
        assert admin_client.get(f"/shares/{path}").status_code == 200, path


@pytest.mark.parametrize(
    ("username", "password", "field", "said"),
    [
        ("bob", "short", "password", "at least 8 characters"),  # the form's
        ("Bob", "long-enough-1", "username", "lower-case letters"),  # the service's
        ("alice", "long-enough-1", "username", "alice exists already on local."),
    ],
)
def test_a_refused_samba_user_stays_in_the_add_form_without_the_password(
    admin_client, local_host, username, password, field, said
):
    SambaUser.objects.create(host=local_host, username="alice")
    response = admin_client.post("/shares/users/add/", {"username": username, "password": password})
    form = shown_again(response, "user-add")
    assert said in form.split(f'name="{field}"', 1)[1].split("</label>", 1)[0], form
    assert f'value="{username}"' in form  # the name as typed
    assert password not in response.content.decode()  # a password is never sent back
    assert not Operation.objects.exists() and SambaUser.objects.count() == 1
