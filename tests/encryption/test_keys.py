"""What an admin types as a key is the key or an error naming the field (never passed over for a key file); secret
fields take text only; a change of key is an admin's, with the root's name typed, and retires the old key instead of
destroying it; a key export is its maker's alone, gone after 24 hours, and never written to the audit log. Runners
run on a FakeHost: the commands are asserted, nothing runs."""

import base64
import json
from datetime import timedelta

import pyrage
import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from appliance.choices import Role
from appliance.models import AuditEntry, Operation, User
from appliance.vault import seal, unseal
from encryption import services, tasks
from encryption.models import KeyEscrow, KeyExport, RetiredKey
from encryption.services import create, keys, lock, roots, unlock
from pools.models import Dataset
from tests.support.runners import FakeHost

CANARY = "canary-83c1 staple horse battery"
KEY = "ab" * 32
KEYFILE = "/etc/tarn/keys/tank%keyed.key"
NOT_KEYS = [
    "ab" * 31 + "a",  # 63 digits
    "ab" * 32 + "a",  # 65
    "0x" + "ab" * 31,
    "0x" + KEY,
    "-" + "ab" * 31 + "a",
    "_".join(["abcd" * 4] * 4),  # separators
    "٠١٢٣٤٥٦٧٨٩" * 6 + "٠١٢٣",  # 64 Arabic-Indic digits
    "ab" * 16 + "\n" + "ab" * 16,
    "ab" * 16,  # 32 digits: 16 bytes
    KEY + "\n",
]


@pytest.fixture
def fake(monkeypatch):
    for module in (create, unlock, lock, keys, roots):
        monkeypatch.setattr(module, "inventory_refresh", lambda **_: None)  # the mirror is the test's to set
    return FakeHost().install(monkeypatch)


def _session(client, host):
    session = client.session
    session["host_id"] = host.pk
    session.save()
    return client


def _lock(host, name: str) -> None:
    for d in Dataset.objects.filter(host=host, properties__encryptionroot__value=name):
        d.properties["keystatus"]["value"] = "unavailable"
        d.save(update_fields=["properties"])


@pytest.mark.parametrize("typed", NOT_KEYS)
def test_a_hex_key_that_is_not_one_is_refused_naming_the_field_never_passed_over(host, admin_user, admin_client, typed):
    with pytest.raises(ValidationError) as refused:
        services.unlock_start(host=host, user=admin_user, roots=["tank/keyed"], secret=typed, dry_run=True)
    assert "64 hex digits" in refused.value.message_dict["secret"][0]
    api = admin_client.post(
        "/api/v1/encryption-roots/unlock/",
        {"host": "nas1", "roots": ["tank/keyed"], "secret": typed, "dry_run": True},
        content_type="application/json",
    )
    assert api.status_code == 400 and "secret" in api.json(), api.content
    page = _session(admin_client, host).post(
        "/encryption/unlock/", {"roots": ["tank/keyed"], "secret": typed, "dry_run": "on"}, follow=True
    )
    assert "64 hex digits" in page.content.decode()
    assert not Operation.objects.exists()


def test_a_refused_form_stays_open_on_the_list_with_each_error_under_its_field(host, admin_client):
    """Unlock, change of key and export: a form's own error and the service's both come back on the list page, the
    form shown again (never a toast over a folded page), nothing queued, no secret echoed."""
    page = _session(admin_client, host).post(
        "/encryption/unlock/", {"roots": ["tank/keyed"], "secret": "cafe" * 8, "dry_run": "on"}
    )
    html = page.content.decode()
    unlock_form = html[html.index('id="unlock-form"') : html.index("</form>", html.index('id="unlock-form"'))]
    assert page.status_code == 400 and "64 hex digits" in unlock_form, unlock_form  # the service's refusal
    assert "cafe" * 8 not in html, "the key typed is not shown again"
    change = {"root": "tank/keyed", "new_passphrase": CANARY, "new_passphrase_confirm": CANARY, "confirm": "keyed"}
    page = admin_client.post("/encryption/change-key/", change)
    html = page.content.decode()
    change_form = html[html.index('id="change-key-form"') : html.index("</form>", html.index('id="change-key-form"'))]
    assert page.status_code == 400 and "errorlist" in change_form and "tank/keyed" in change_form, change_form
    assert CANARY not in html
    assert not Operation.objects.exists()


def test_a_typed_key_is_the_only_one_tried_and_a_passphrase_goes_to_the_passphrase_roots(
    host, admin_user, fake, run_queued
):
    _lock(host, "tank/keyed")
    KeyEscrow.objects.create(host=host, dataset="tank/keyed", keyformat="hex", sealed=seal("cd" * 32))
    fake.answer("zfs", "load-key", returncode=255, stderr="Key load error: Incorrect key provided for 'tank/keyed'.\n")
    op = run_queued(services.unlock_start, host=host, user=admin_user, roots=["tank/keyed"], secret=KEY, dry_run=True)
    assert op.status == "failed" and "does not fit tank/keyed" in op.message, op.message
    loads = [c for c in fake.calls if c.argv[:2] == ["zfs", "load-key"]]
    assert [c.argv for c in loads] == [["zfs", "load-key", "-n", "-L", "prompt", "--", "tank/keyed"]]
    assert loads[0].text == KEY + "\n"  # neither its key file nor the escrowed key was tried instead
    # Both kinds chosen: a passphrase typed is the passphrase root's; the key root opens from its key file
    assert services.unlock_start(host=host, user=admin_user, roots=["tank/vault", "tank/keyed"], secret=CANARY)
    with pytest.raises(ValidationError, match="A passphrase has 8 to 512 bytes"):
        services.unlock_start(host=host, user=admin_user, roots=["tank/vault", "tank/keyed"], secret="short")


@pytest.mark.parametrize(
    ("url", "data", "field"),
    [
        ("create/", {"name": "tank/n", "passphrase": 100000000.0, "passphrase_confirm": 100000000.0}, "passphrase"),
        ("create/", {"name": "tank/n", "passphrase": ["a" * 12], "passphrase_confirm": "a" * 12}, "passphrase"),
        ("unlock/", {"roots": ["tank/vault"], "secret": 123456789012}, "secret"),
        ("unlock/", {"roots": ["tank/vault"], "secret": True}, "secret"),
    ],
)
def test_secret_fields_take_text_only(host, admin_client, url, data, field):
    answer = admin_client.post(
        f"/api/v1/encryption-roots/{url}", {"host": "nas1", **data}, content_type="application/json"
    )
    assert answer.status_code == 400 and "as text" in answer.json()[field][0], answer.content
    assert not Operation.objects.exists()


def test_a_change_of_key_is_an_admins_with_the_roots_name_typed(host, admin_client, operator_client):
    request = {"host": "nas1", "root": "tank/keyed", "new_passphrase": CANARY, "new_passphrase_confirm": CANARY}
    url = "/api/v1/encryption-roots/change-key/"
    assert (
        operator_client.post(url, {**request, "confirm": "tank/keyed"}, content_type="application/json").status_code
        == 403
    )
    page = _session(operator_client, host).post("/encryption/change-key/", {**request, "confirm": "tank/keyed"})
    assert page.status_code == 403
    for confirm in ("", "tank/vault", "keyed"):
        answer = admin_client.post(url, {**request, "confirm": confirm}, content_type="application/json")
        assert answer.status_code == 400 and "confirm" in answer.json(), answer.content
    assert not Operation.objects.exists()
    assert "change-key-form" not in _session(operator_client, host).get("/encryption/").content.decode()
    made = admin_client.post(url, {**request, "confirm": "tank/keyed"}, content_type="application/json")
    assert made.status_code == 202, made.content


def test_a_change_of_key_retires_the_old_key_until_an_admin_removes_it(host, admin_user, fake, run_queued):
    """An operator could once re-key a key file's root to their own passphrase, and Tarn then deleted the key file
    and the admin's escrow: now the old key stays, sealed and on the NAS, until an admin removes it by name."""
    KeyEscrow.objects.create(host=host, dataset="tank/keyed", keyformat="hex", sealed=seal(KEY))
    op = run_queued(
        services.change_key_start,
        host=host,
        user=admin_user,
        root="tank/keyed",
        confirm="tank/keyed",
        new_passphrase=CANARY,
        new_passphrase_confirm=CANARY,
        pbkdf2iters=1_000_000,
    )
    assert op.status == "succeeded", op.message
    change = ["zfs", "change-key", "-o", "keyformat=passphrase", "-o", "keylocation=prompt"]
    assert [*change, "-o", "pbkdf2iters=1000000", "--", "tank/keyed"] in fake.argvs
    assert not [a for a in fake.argvs if a[0] == "remove_file"]  # the old key file stays on the NAS
    old = RetiredKey.objects.get(host=host, dataset="tank/keyed")
    assert (old.keyformat, old.keyfile, old.retired_by) == ("hex", KEYFILE, admin_user)
    assert unseal(old.sealed) == KEY and not KeyEscrow.objects.exists()
    assert "kept (sealed in Tarn and /etc/tarn/keys/tank%keyed.key)" in op.log

    # An export of the root carries it (its current key is a passphrase now: left out)
    keyed = Dataset.objects.get(host=host, name="tank/keyed")
    keyed.properties["keyformat"]["value"], keyed.properties["keylocation"]["value"] = "passphrase", "prompt"
    keyed.save(update_fields=["properties"])
    op = run_queued(
        services.keys_export_start,
        host=host,
        user=admin_user,
        roots=["tank/keyed"],
        confirm="tank/keyed",
        export_passphrase=CANARY,
        export_passphrase_confirm=CANARY,
    )
    assert op.status == "succeeded" and "0 keys and 1 old keys exported" in op.message, op.message
    document = json.loads(pyrage.passphrase.decrypt(bytes(KeyExport.objects.get().data), CANARY))
    assert [k["key"] for k in document["retired"]["tank/keyed"]] == [KEY] and document["keys"] == {}

    with pytest.raises(ValidationError) as refused:
        services.retired_key_remove_start(user=admin_user, key=old, confirm="tank/vault")
    assert "confirm" in refused.value.message_dict
    fake.reset()
    op = run_queued(services.retired_key_remove_start, user=admin_user, key=old, confirm="tank/keyed")
    assert op.status == "succeeded", op.message
    assert fake.argvs == [["remove_file", KEYFILE]] and not RetiredKey.objects.exists()


def test_a_retired_key_file_in_use_again_is_not_removed(host, admin_user, fake, run_queued):
    old = RetiredKey.objects.create(host=host, dataset="tank/keyed", keyformat="hex", keyfile=KEYFILE)
    op = run_queued(services.retired_key_remove_start, user=admin_user, key=old, confirm="tank/keyed")
    assert op.status == "failed" and "key file of tank/keyed now" in op.message, op.message
    assert not [a for a in fake.argvs if a[0] == "remove_file"] and RetiredKey.objects.exists()


def test_retired_keys_are_listed_to_admins_and_removed_by_name(host, admin_client, operator_client):
    old = RetiredKey.objects.create(host=host, dataset="tank/keyed", keyformat="hex", sealed=seal(KEY), keyfile=KEYFILE)
    rows = admin_client.get("/api/v1/retired-keys/?host=nas1").json()["results"]
    assert [(r["dataset"], r["sealed"], r["keyfile"]) for r in rows] == [("tank/keyed", True, KEYFILE)]
    assert KEY not in json.dumps(rows) and old.sealed not in json.dumps(rows)
    assert operator_client.get("/api/v1/retired-keys/").status_code == 403
    page = _session(admin_client, host).get("/encryption/").content.decode()
    table = page[page.index('<table class="table" id="retired-keys">') :]
    assert 'data-retired="tank/keyed"' in table and KEYFILE in table and "<title>Encryption" in page
    assert 'data-retired="tank/keyed"' not in _session(operator_client, host).get("/encryption/").content.decode()
    form = f"/encryption/retired-keys/{old.pk}/remove/"
    assert admin_client.post(form, {"confirm": "tank/vault"}).status_code == 302 and not Operation.objects.exists()
    url = f"/api/v1/retired-keys/{old.pk}/remove/"
    assert admin_client.post(url, {"confirm": "tank"}, content_type="application/json").status_code == 400
    assert admin_client.post(url, {"confirm": "tank/keyed"}, content_type="application/json").status_code == 202


def test_key_exports_older_than_a_day_are_deleted_by_the_beat(host, admin_user):
    old = KeyExport.objects.create(host=host, user=admin_user, roots=["tank/keyed"], data=b"age")
    fresh = KeyExport.objects.create(host=host, user=admin_user, roots=["tank/keyed"], data=b"age")
    KeyExport.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=24, minutes=1))
    assert tasks.key_exports_prune_task.apply().successful()
    assert list(KeyExport.objects.values_list("pk", flat=True)) == [fresh.pk]


def test_only_the_admin_who_made_an_export_sees_and_downloads_it(host, admin_user, admin_client):
    other = User.objects.create_user("ada", password="x" * 12, role=Role.ADMIN)
    theirs = KeyExport.objects.create(host=host, user=other, roots=["tank/keyed"], data=b"age")
    mine = KeyExport.objects.create(host=host, user=admin_user, roots=["tank/keyed"], data=b"mine")
    assert [e["id"] for e in admin_client.get("/api/v1/key-exports/").json()["results"]] == [mine.pk]
    assert admin_client.post(f"/api/v1/key-exports/{theirs.pk}/download/").status_code == 404
    assert _session(admin_client, host).post(f"/encryption/exports/{theirs.pk}/download/").status_code == 404
    assert KeyExport.objects.filter(pk=theirs.pk).exists()  # not consumed
    page = _session(admin_client, host).post(f"/encryption/exports/{mine.pk}/download/")
    assert page.status_code == 200 and page.content == b"mine"


def test_an_uploaded_key_export_is_masked_in_the_audit_log(host, operator_client):
    data = pyrage.passphrase.encrypt(
        json.dumps({"format": services.EXPORT_FORMAT, "keys": {"tank/vault": {"key": KEY}}}).encode(), CANARY
    )
    blob = base64.b64encode(data).decode()
    answer = operator_client.post(
        "/api/v1/encryption-roots/unlock/",
        {"host": "nas1", "roots": ["tank/vault"], "key_export": blob, "key_export_passphrase": CANARY},
        content_type="application/json",
    )
    assert answer.status_code in (202, 400), answer.content
    entry = AuditEntry.objects.get(path="/api/v1/encryption-roots/unlock/")
    assert entry.params["key_export"] == "***" and blob[:40] not in json.dumps(entry.params)
