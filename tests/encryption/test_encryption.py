"""Encryption's rules, before anything reaches a host: every bad input is a field error and nothing is queued; a
passphrase or key never lands in an operation's params, messages or the audit log. What zfs does with the keys is
the lab's to prove (tests/lab/test_encryption.py)."""

import base64
import json
import re

import pyrage
import pytest
from django.core.exceptions import ValidationError

from appliance.models import AuditEntry, Operation
from encryption import services
from encryption.models import KeyEscrow
from hostlib import zfs
from hostlib.zpool import PoolLayout, VdevSpec
from pools import services as pool_services

CANARY = "canary-51d2 correct horse"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"passphrase": "short", "passphrase_confirm": "short"}, "passphrase"),
        ({"passphrase": "x" * 513, "passphrase_confirm": "x" * 513}, "passphrase"),
        ({"passphrase": "nul\0inside it", "passphrase_confirm": "nul\0inside it"}, "passphrase"),
        ({"passphrase": "two\nlines here", "passphrase_confirm": "two\nlines here"}, "passphrase"),
        ({"passphrase": CANARY, "passphrase_confirm": CANARY + "!"}, "passphrase_confirm"),
        ({"passphrase": CANARY, "passphrase_confirm": CANARY, "escrow": True}, "escrow"),
        ({"keyformat": "pem"}, "keyformat"),
        ({"cipher": "rot13", "passphrase": CANARY, "passphrase_confirm": CANARY}, "encryption"),
        ({"name": "tank/vault", "passphrase": CANARY, "passphrase_confirm": CANARY}, "name"),
        ({"name": "-tank/x", "passphrase": CANARY, "passphrase_confirm": CANARY}, "name"),
        ({"passphrase": CANARY, "passphrase_confirm": CANARY, "pbkdf2iters": 99_999}, "pbkdf2iters"),
        ({"passphrase": CANARY, "passphrase_confirm": CANARY, "pbkdf2iters": 10_000_001}, "pbkdf2iters"),
        ({"passphrase": CANARY, "passphrase_confirm": CANARY, "pbkdf2iters": "100000"}, "pbkdf2iters"),
        ({"keyformat": "hex", "pbkdf2iters": 100_000}, "pbkdf2iters"),
    ],
)
def test_bad_input_to_create_names_the_field_and_queues_nothing(host, admin_user, data, field):
    with pytest.raises(ValidationError) as refused:
        services.encrypted_create_start(host=host, user=admin_user, **{"name": "tank/new", **data})
    assert field in refused.value.message_dict, refused.value.message_dict
    assert not Operation.objects.exists() and not KeyEscrow.objects.exists()
    assert CANARY not in str(refused.value)


def test_key_files_live_only_in_tarns_key_folder():
    first, second = zfs.key_file_for("tank/a.b"), zfs.key_file_for("tank/a.b")
    assert re.fullmatch(r"/etc/tarn/keys/tank%a\.b\.[0-9a-f]{8}\.key", first) and first != second  # never replaced
    with pytest.raises(ValueError):
        zfs.key_file_for("tank/../x")
    for bad in ["/etc/passwd", "/etc/tarn/keys/../shadow.key", "/tank/share/k.key", "/etc/tarn/keys/sub/k.key"]:
        with pytest.raises(ValueError, match="key file"):
            zfs.check_key_file(bad)
    with pytest.raises(ValueError, match="64 hex digits"):
        zfs.check_hex_key("abc123")
    assert zfs.key_input("raw", "ab" * 32) == bytes([0xAB]) * 32


def test_unlock_and_lock_refuse_what_is_not_an_encryption_root_or_has_no_key(host, admin_user):
    with pytest.raises(ValidationError, match="tank/vault's: unlock that"):
        services.unlock_start(host=host, user=admin_user, roots=["tank/vault/docs"], secret=CANARY)
    with pytest.raises(ValidationError, match="needs its passphrase"):
        services.unlock_start(host=host, user=admin_user, roots=["tank/vault"])
    with pytest.raises(ValidationError, match="Already unlocked: tank/keyed"):
        services.unlock_start(host=host, user=admin_user, roots=["tank/keyed"])
    with pytest.raises(ValidationError, match="locked already"):
        services.lock_start(host=host, user=admin_user, root="tank/vault")
    with pytest.raises(ValidationError, match="Not an encryption root"):
        services.lock_start(host=host, user=admin_user, root="tank")
    assert not Operation.objects.exists()


def test_a_secret_travels_split_never_in_params(host, admin_user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        op = services.unlock_start(host=host, user=admin_user, roots=["tank/vault"], secret=CANARY, dry_run=True)
    op.refresh_from_db()
    assert op.params == {"roots": ["tank/vault"], "dry_run": True}
    assert CANARY not in str(op.params) + op.message + op.target


def test_the_pages_and_api_list_roots_and_refuse_bad_input(host, admin_client, viewer_client):
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    page = admin_client.get("/encryption/").content.decode()
    assert 'data-root="tank/vault"' in page and 'data-root="tank/keyed"' in page and "tank/vault/docs" not in page
    roots = {r["name"]: r for r in admin_client.get("/api/v1/encryption-roots/?host=nas1").json()}
    assert roots["tank/vault"]["locked"] is True and roots["tank/vault"]["members"] == 2
    assert roots["tank/keyed"]["keyformat"] == "hex" and roots["tank/keyed"]["locked"] is False
    bad = admin_client.post(
        "/api/v1/encryption-roots/create/",
        {"host": "nas1", "name": "tank/n", "passphrase": CANARY, "passphrase_confirm": "other one"},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "passphrase_confirm" in bad.json() and CANARY not in bad.content.decode()
    assert (
        viewer_client.post("/api/v1/encryption-roots/lock/", {"host": "nas1", "root": "tank/keyed"}).status_code == 403
    )
    form = admin_client.post(
        "/encryption/new/",
        {"name": "tank/n", "keyformat": "passphrase", "passphrase": "short", "passphrase_confirm": "short"},
    )
    assert form.status_code == 200 and "8 to 512 bytes" in form.content.decode() and not Operation.objects.exists()


def test_no_passphrase_in_the_audit_log_or_the_operation_from_a_page_or_the_api(host, admin_client):
    made = admin_client.post(
        "/api/v1/encryption-roots/create/",
        {"host": "nas1", "name": "tank/n", "passphrase": CANARY, "passphrase_confirm": CANARY},
        content_type="application/json",
    )
    assert made.status_code == 202, made.content
    session = admin_client.session
    session["host_id"] = host.pk
    session.save()
    page = admin_client.post(
        "/encryption/new/",
        {
            "name": "tank/m",
            "cipher": "aes-256-gcm",
            "keyformat": "passphrase",
            "passphrase": CANARY,
            "passphrase_confirm": CANARY,
        },
    )
    assert page.status_code == 302
    unlock = admin_client.post("/encryption/unlock/", {"roots": ["tank/vault"], "secret": CANARY, "dry_run": "on"})
    assert unlock.status_code == 302
    entries = list(AuditEntry.objects.values())
    assert len(entries) == 3 and all(e["operation_id"] or e["params"] for e in entries)
    ops = list(Operation.objects.values())
    assert len(ops) == 3
    assert CANARY not in str(entries) + str(ops)


def test_change_key_and_export_refuse_bad_input_and_nothing_is_queued(host, admin_user, operator_client, viewer_client):
    with pytest.raises(ValidationError, match="tank/vault's: unlock that"):
        services.change_key_start(host=host, user=admin_user, root="tank/vault/docs", current_secret=CANARY)
    with pytest.raises(ValidationError, match="locked: unlock it first"):
        services.change_key_start(host=host, user=admin_user, root="tank/vault", current_secret=CANARY)
    keyed = {"host": host, "user": admin_user, "root": "tank/keyed", "confirm": "tank/keyed"}
    with pytest.raises(ValidationError) as differ:
        services.change_key_start(**keyed, new_passphrase=CANARY, new_passphrase_confirm="other")
    assert "new_passphrase_confirm" in differ.value.message_dict
    with pytest.raises(ValidationError) as bad_current:  # checked before anything is queued
        services.change_key_start(**keyed, current_secret="a\nb", keyformat="hex")
    assert "current_secret" in bad_current.value.message_dict
    with pytest.raises(ValidationError, match="parent tank is not encrypted"):
        services.change_key_start(**keyed, inherit=True)
    with pytest.raises(ValidationError, match="Type nas1 to export every key"):
        services.keys_export_start(
            host=host,
            user=admin_user,
            roots=[],
            confirm="tank",
            export_passphrase=CANARY,
            export_passphrase_confirm=CANARY,
        )
    with pytest.raises(ValidationError, match="8 to 512 bytes"):
        services.keys_export_start(
            host=host,
            user=admin_user,
            roots=["tank/keyed"],
            confirm="tank/keyed",
            export_passphrase="short",
            export_passphrase_confirm="short",
        )
    request = {"host": "nas1", "confirm": "nas1", "export_passphrase": CANARY, "export_passphrase_confirm": CANARY}
    for client in (operator_client, viewer_client):
        assert (
            client.post("/api/v1/encryption-roots/export/", request, content_type="application/json").status_code == 403
        )
    assert not Operation.objects.exists()


def test_an_uploaded_export_opens_only_with_its_passphrase():
    data = pyrage.passphrase.encrypt(
        json.dumps({"format": services.EXPORT_FORMAT, "keys": {"tank/k": {"key": "ab" * 32}}}).encode(), CANARY
    )
    assert services.keys_from_export(data=data, passphrase=CANARY) == {"tank/k": "ab" * 32}
    with pytest.raises(ValidationError, match="does not open with that passphrase"):
        services.keys_from_export(data=data, passphrase="another passphrase")
    # Made on a quiet machine, opened on a busy one: age refuses the work, and says so (not "wrong passphrase").
    heavy = re.sub(rb"(-> scrypt \S+) \d+", rb"\1 40", data, count=1)
    with pytest.raises(ValidationError, match="this busy"):
        services.keys_from_export(data=heavy, passphrase=CANARY)
    with pytest.raises(ValidationError, match="Not a Tarn key export"):
        services.keys_from_export(data=pyrage.passphrase.encrypt(b"[1, 2]", CANARY), passphrase=CANARY)
    with pytest.raises(ValidationError):
        services.keys_from_export(data=b"plain text", passphrase=CANARY)
    for keys in ({"tank/k": "ab"}, ["tank/k"], {"tank/k": {"key": 5}}):  # made by hand: a field error, never a 500
        crafted = pyrage.passphrase.encrypt(
            json.dumps({"format": services.EXPORT_FORMAT, "keys": keys}).encode(), CANARY
        )
        with pytest.raises(ValidationError, match="damaged"):
            services.keys_from_export(data=crafted, passphrase=CANARY)


def test_a_crafted_export_uploaded_to_the_api_is_a_400_naming_the_field(host, operator_client):
    crafted = pyrage.passphrase.encrypt(
        json.dumps({"format": services.EXPORT_FORMAT, "keys": {"tank/vault": "x"}}).encode(), CANARY
    )
    answer = operator_client.post(
        "/api/v1/encryption-roots/unlock/",
        {
            "host": "nas1",
            "roots": ["tank/vault"],
            "key_export": base64.b64encode(crafted).decode(),
            "key_export_passphrase": CANARY,
        },
        content_type="application/json",
    )
    assert answer.status_code == 400 and "key_export" in answer.json(), answer.content
    assert not Operation.objects.exists()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"encryption": "passphrase", "passphrase": "short", "passphrase_confirm": "short"}, "passphrase"),
        ({"encryption": "passphrase", "passphrase": CANARY, "passphrase_confirm": "other"}, "passphrase_confirm"),
        ({"encryption": "rot13"}, "encryption"),
        (
            {"encryption": "passphrase", "passphrase": CANARY, "passphrase_confirm": CANARY, "pbkdf2iters": 1},
            "pbkdf2iters",
        ),
        ({"encryption": "raw", "pbkdf2iters": 500_000}, "pbkdf2iters"),
    ],
)
def test_an_encrypted_pool_refuses_bad_input_naming_the_field(host, admin_user, data, field):
    layout = PoolLayout(data=(VdevSpec("stripe", ("/dev/disk/by-id/virtio-x",)),))
    with pytest.raises(ValidationError) as refused:
        pool_services.pool_create_start(
            host=host, user=admin_user, name="vault", layout=layout, pool_props={}, root_props={}, **data
        )
    assert field in refused.value.message_dict and not Operation.objects.exists()
    assert CANARY not in str(refused.value)


def test_an_encrypted_pools_passphrase_rounds_are_a_root_option():
    key = zfs.NewKey(keyformat="passphrase", pbkdf2iters=2_000_000)
    assert key.options("-O")[-2:] == ["-O", "pbkdf2iters=2000000"]
