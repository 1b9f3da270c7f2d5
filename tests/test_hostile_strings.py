"""Property-style: generated hostile strings in every validating field of the write API get a 400 naming a field,
or are taken literally (the saved row or the queued argv holds exactly what was sent) — never a 500."""

import json
import random

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from appliance.models import Host, Operation
from benchmarks.models import CustomProfile, Run, Schedule
from pools.models import Dataset, Pool, Snapshot
from shares.models import NfsExport, SmbShare
from tarn.celery import app
from tuning.models import ChangeSet, KernelState, Link, Setting

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


# --- the fields issue 23 hardened: tuning's links, bridges and tunables, and benchmarks' numbers and addresses ------


@pytest.fixture
def tunable_host(inventory, local_host):
    """The inventory plus what tuning and benchmarks check against: links with addresses, kernel values, a NAS whose
    address iperf3 may reach from this host."""
    now = timezone.now()
    for name, kind in (("eth1", "ether"), ("eth2", "ether"), ("br9", "bridge")):
        Link.objects.create(host=local_host, name=name, kind=kind, mtu=1500, min_mtu=68, max_mtu=9000, observed_at=now)
    KernelState.objects.create(
        host=local_host,
        observed_at=now,
        sysctl={"net.core.rmem_max": "212992"},
        zfs={"zil_replay_disable": "0"},
    )
    nas = Host.objects.create(name="nas", transport="ssh", address="192.0.2.9")
    Link.objects.create(
        host=nas, name="eth1", kind="ether", mtu=1500, addresses=[{"cidr": "10.77.0.2/24"}], observed_at=now
    )
    return local_host


SCHEDULE = {"name": "weekly", "profiles": ["seq-write-1"], "target": "tank/docs", "minute": "0", "hour": "3"}
HARDENED = [  # (url, a valid body, the fields to attack: "a[]" sends [value], "a.b" sends {"b": value})
    ("/api/v1/links/mtu/", {"host": "local", "link": "eth1", "mtu": 1500}, ["link", "mtu", "peers[]", "seconds"]),
    ("/api/v1/links/bridge/", {"host": "local", "name": "br0", "ports": ["eth1", "eth2"]}, ["name", "ports[]"]),
    ("/api/v1/links/bridge-delete/", {"host": "local", "name": "br9", "confirm": "br9"}, ["name", "confirm"]),
    (
        "/api/v1/tunables/",
        {"host": "local", "kind": "sysctl", "key": "net.core.rmem_max", "value": "1"},
        ["key", "value"],
    ),
    (
        "/api/v1/tunables/",
        {"host": "local", "kind": "zfs", "key": "zil_replay_disable", "value": "1", "confirm": "zil_replay_disable"},
        ["confirm", "value"],
    ),
    ("/api/v1/benchmark-profiles/", {"based_on": "randread-4k", "title": "mine", "job": {}}, ["job.bs", "job.size"]),
    (
        "/api/v1/benchmark-runs/network/",
        {"host": "nas", "profile": "iperf-1", "peer": "local", "address": "10.77.0.2"},
        ["address", "runtime"],
    ),
    ("/api/v1/benchmark-schedules/", {"host": "local", **SCHEDULE}, ["minute", "hour", "day_of_week", "drop_percent"]),
]


def _with(valid: dict, field: str, value: str) -> dict:
    if field.endswith("[]"):
        return {**valid, field[:-2]: [value]}
    if "." in field:
        outer, inner = field.split(".")
        return {**valid, outer: {inner: value}}
    return {**valid, field: value}


def _held() -> str:
    """Everything a request may have saved, as JSON: operations, change sets and settings, runs, profiles, schedules."""
    rows = [Operation.objects.values(), ChangeSet.objects.values(), Setting.objects.values(), Run.objects.values()]
    rows += [CustomProfile.objects.values(), Schedule.objects.values()]
    return json.dumps([list(r) for r in rows], default=str)


def _forget() -> None:
    for model in (Operation, ChangeSet, Run, CustomProfile, Schedule, PeriodicTask):
        model.objects.all().delete()


@pytest.mark.parametrize("url, valid, fields", HARDENED, ids=[f"{e[0]}:{e[2][0]}" for e in HARDENED])
def test_hostile_strings_in_the_hardened_fields_get_a_400_or_are_taken_literally(
    admin_client, tunable_host, monkeypatch, url, valid, fields
):
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)
    admin_client.raise_request_exception = False
    assert admin_client.post(url, valid, content_type="application/json").status_code < 300, url  # the body is valid
    _forget()
    for field in fields:
        for value in [*hostile(20), "１５００", "٣", "²", "fe80::1%eth0", "eth1 ", "2147483648", "3"]:
            response = admin_client.post(url, _with(valid, field, value), content_type="application/json")
            assert response.status_code in (400, 201, 202), (url, field, repr(value), response.status_code)
            if response.status_code == 400:
                assert response.json(), (url, field, repr(value))
                continue
            assert json.dumps(value)[1:-1] in _held(), (url, field, repr(value))
            _forget()
