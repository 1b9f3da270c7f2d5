"""Property-style: generated hostile strings in every validating field of the write API get a 400 naming a field,
or are taken literally (the saved row or the queued argv holds exactly what was sent) — never a 500."""

import json
import random

import pytest
from django.utils import timezone

from appliance.models import Operation
from pools.models import Dataset, Pool, Snapshot
from shares.models import NfsExport, SmbShare
from tarn.celery import app

SEEDS = [
    "a\nb",
    "a\rb",
    "x\x00y",
    "\x1b[31m",
    "\u202eevil",
    "a\u200bb",
    "\ufeff",
    "\u2066x\u2069",  # control, bidi
    "../../etc/passwd",
    "/tank/../etc",
    "tank/.zfs",
    "~root",
    "%U$(id)",
    "`id`",
    "a;b",
    "a|b",
    "a&b",  # path, shell
    "-rf",
    "--help",
    "x(rw,no_root_squash)",
    "*(rw)",
    "[global]",
    "include = /etc/shadow",
    "@root",  # options
    "x" * 300,
    "ä" * 200,
    "",
    " ",
    "\t",
    "null",
    "{}",
    "0",
]


def hostile(n: int = 40) -> list[str]:
    """The seeds, and random mixes of them and of random code points (fixed seed: a failure reproduces)."""
    rng = random.Random(4242)
    mixed = [rng.choice(SEEDS) + rng.choice(SEEDS) for _ in range(n // 2)]
    noise = ["".join(chr(rng.randrange(0x0, 0x3000)) for _ in range(rng.randrange(1, 40))) for _ in range(n // 2)]
    return SEEDS + mixed + noise


@pytest.fixture
def inventory(local_host):
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=timezone.now())
    now = timezone.now()
    Dataset.objects.create(
        host=local_host, pool=pool, name="tank", type="filesystem", mountpoint="/tank", observed_at=now
    )
    docs = Dataset.objects.create(
        host=local_host,
        pool=pool,
        name="tank/docs",
        type="filesystem",
        depth=1,
        mountpoint="/tank/docs",
        observed_at=now,
    )
    Snapshot.objects.create(dataset=docs, name="s1", created_at=now)
    return docs


ENDPOINTS = [  # (url, a valid body, the string fields to attack)
    (
        "/api/v1/smb-shares/",
        {"host": "local", "name": "docs", "dataset": "tank/docs"},
        [
            "name",
            "dataset",
            "comment",
            "valid_users",
            "hosts_allow",
            "hosts_deny",
            "snapshot_prefix",
            "time_machine_quota",
            "preset",
        ],
    ),
    (
        "/api/v1/nfs-exports/",
        {"host": "local", "dataset": "tank/docs", "clients": "10.0.0.0/24"},
        ["dataset", "clients", "comment", "squash", "sec"],
    ),
    (
        "/api/v1/samba-users/",
        {"host": "local", "username": "alice", "password": "a-long-password-1"},
        ["username", "password"],
    ),
    ("/api/v1/datasets/", {"host": "local", "name": "tank/new"}, ["name", "volsize"]),
    ("/api/v1/snapshots/", {"host": "local", "dataset": "tank/docs", "name": "s2"}, ["dataset", "name"]),
    (
        "/api/v1/pools/",
        {"host": "local", "name": "p", "data": [{"kind": "mirror", "disks": ["/dev/x", "/dev/y"]}]},
        ["name"],
    ),
]


@pytest.mark.parametrize("url, valid, fields", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
def test_hostile_strings_get_a_400_or_are_taken_literally(admin_client, inventory, monkeypatch, url, valid, fields):
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)
    admin_client.raise_request_exception = False
    for field in fields:
        for value in hostile():
            response = admin_client.post(url, {**valid, field: value}, content_type="application/json")
            assert response.status_code in (400, 202), (url, field, repr(value), response.status_code)
            if response.status_code == 400:
                assert response.json(), (url, field, repr(value))
                continue
            op = Operation.objects.get(pk=response.json()["id"])
            held = json.dumps(op.params) + json.dumps(list(_rows_touched()), default=str)
            literal = json.dumps(value.strip())[1:-1]  # DRF trims surrounding white space, as documented
            assert literal in held or field == "password", (url, field, repr(value))
            Operation.objects.all().delete()  # frees the target for the next value
            _forget_rows()


def _rows_touched():
    yield from SmbShare.objects.values()
    yield from NfsExport.objects.values()


def _forget_rows():
    SmbShare.objects.all().delete()
    NfsExport.objects.all().delete()
