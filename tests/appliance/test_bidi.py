"""Text-direction controls are refused in the text people type (issue 23 item 11): one shared validator
(appliance.validators.no_bidi) on every free-text field of the forms and the API, a 400 or a form error naming the
field, nothing saved. Every text field named like free text (title, name, description, reason, represents, comment)
in a form or a serializer must be classified below, so a new one cannot be forgotten."""

import importlib
import inspect

import pytest
from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from rest_framework import serializers

from analytics.models import Channel
from appliance.models import ApiToken, Host
from appliance.validators import BIDI_CONTROLS, no_bidi
from benchmarks.models import CustomProfile, Schedule
from pools.models import Dataset, Pool, Snapshot
from shares.models import NfsExport, SmbShare
from tests.support.apps import product_apps
from tuning.models import Link, Setting

CONTROLS = [
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200e",
    "\u200f",
]
APPS = product_apps()  # every app, replication and those to come included
FREE_TEXT_NAMES = {"title", "name", "description", "reason", "represents", "comment"}

# Free text: anything a person may write, so the shared validator refuses direction controls.
FREE_TEXT = {
    "appliance.forms.ApiTokenForm.name",
    "tuning.forms.SettingForm.reason",
    "tuning.api.serializers.SettingRequest.reason",
    "benchmarks.forms.ProfileForm.title",
    "benchmarks.forms.ProfileForm.represents",
    "benchmarks.forms.ScheduleForm.name",
    "benchmarks.api.serializers.ProfileCopyRequest.title",
    "benchmarks.api.serializers.ProfileCopyRequest.represents",
    "benchmarks.api.serializers.ScheduleSerializer.name",
    "analytics.forms.ChannelForm.name",
    "analytics.api.serializers.ChannelSerializer.name",
    "shares.forms.NfsExportForm.comment",  # kept in the database only, so no config file's pattern sees it
    "shares.api.serializers.NfsExportSerializer.comment",
    "shares.api.serializers.NfsExportCreateRequest.comment",
}
# Names with a strict ASCII pattern of their own (host, pool, dataset, snapshot, share and link names), and SMB share
# comments, which go into Samba's file and are checked by hostlib.configfiles.TEXT (direction controls included):
# refused by their own checks (test_names_with_their_own_pattern_refuse_direction_controls_too).
OWN_PATTERN = {
    "certificates.forms.ImportForm.name",  # a host name or an IP address (certificates.services.host_name)
    "certificates.api.serializers.CertificateImportRequest.name",
    "appliance.forms.HostForm.name",
    "appliance.api.serializers.HostCreateSerializer.name",
    "pools.forms.PoolCreateForm.name",
    "pools.forms.DatasetCreateForm.name",
    "encryption.forms.CreateForm.name",
    "encryption.api.serializers.CreateRequest.name",
    "pools.forms.SnapshotCreateForm.name",
    "pools.api.serializers.PoolCreateRequest.name",
    "pools.api.serializers.DatasetCreateRequest.name",
    "pools.api.serializers.SnapshotCreateRequest.name",
    "shares.forms.SmbShareForm.name",
    "shares.forms.SmbShareForm.comment",
    "shares.api.serializers.SmbShareCreateRequest.name",
    "shares.api.serializers.SmbShareCreateRequest.comment",
    "shares.api.serializers.SmbShareSerializer.name",
    "shares.api.serializers.SmbShareSerializer.comment",
    "tuning.forms.BridgeForm.name",
    "tuning.forms.LinkDeleteForm.name",  # a link's name: hostlib.net.IFNAME (letters, digits, . _ -)
    "tuning.forms.BondForm.name",
    "tuning.forms.VlanForm.name",
    "tuning.api.serializers.BridgeRequest.name",
    "tuning.api.serializers.LinkDeleteRequest.name",
    "tuning.api.serializers.BondRequest.name",
    "tuning.api.serializers.VlanRequest.name",
    "replication.forms.RestoreForm.name",  # a dataset name (test_a_bad_restore_names_its_field_and_nothing_is_started)
    "replication.api.serializers.RestoreRequest.name",
    "permissions.forms.EntryForm.name",  # a user or group: hostlib.acl.NAME (word characters, no controls)
    "permissions.api.serializers.EntrySerializer.name",
    "permissions.forms.QuotaForm.name",  # an account (hostlib.acl.NAME) or a project's id (ASCII digits)
    "permissions.api.serializers.QuotaSetRequest.name",
    "ups.forms.UpsForm.name",  # a UPS name: hostlib.nut.ups_name (letters, digits, _ and -)
    "ups.api.serializers.UpsRequest.name",
}
# Serializers that only ever render a response (what the inventory read, a built-in profile): nothing typed.
OUTPUT_ONLY = {
    "recovery.api.serializers.SnapshotEntrySerializer.name",  # a file's name as read in a snapshot, shown escaped
    "pools.api.serializers.PoolSerializer.name",
    "pools.api.serializers.PoolDetailSerializer.name",
    "pools.api.serializers.VdevSerializer.name",
    "pools.api.serializers.DiskSerializer.name",
    "pools.api.serializers.DatasetSerializer.name",
    "pools.api.serializers.SnapshotSerializer.name",
    "benchmarks.api.serializers.ProfileSerializer.title",
    "benchmarks.api.serializers.ProfileSerializer.represents",
    "permissions.api.serializers.AclEntryOut.name",
    "ups.api.serializers.UpsSerializer.name",
}


def form_and_serializer_classes():
    for app in APPS:
        for name in (f"{app}.forms", f"{app}.api.serializers"):
            module = importlib.import_module(name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == name and issubclass(cls, (forms.BaseForm, serializers.BaseSerializer)):
                    if not getattr(cls, "Meta", None) and cls.__name__ == "ModelSerializer":
                        continue  # the shared base, not a serializer of its own
                    yield cls


def built_fields(cls) -> dict:
    """The fields as a request sees them (an instance's: built from the model, validators added in __init__)."""
    try:
        return dict(cls().fields)
    except TypeError:  # a form that needs its choices: its declared fields
        return dict(getattr(cls, "base_fields", None) or cls._declared_fields)


def text_fields():
    for cls in form_and_serializer_classes():
        for name, field in built_fields(cls).items():
            if name not in FREE_TEXT_NAMES or getattr(field, "read_only", False):
                continue
            if isinstance(field, (forms.CharField, serializers.CharField)):
                yield f"{cls.__module__}.{cls.__name__}.{name}", field


@pytest.mark.parametrize("char", CONTROLS)
def test_every_direction_control_is_refused_and_named(char):
    assert char in BIDI_CONTROLS
    with pytest.raises(ValidationError) as refused:
        no_bidi(f"profile {char}evil")
    assert f"U+{ord(char):04X} at character 9" in refused.value.messages[0]


@pytest.mark.parametrize("text", ["", "Nightly run", "אבגד", "ليلي", "zero\u200bwidth?", "tank/data", "ä" * 80])
def test_text_without_direction_controls_passes_right_to_left_letters_included(text):
    no_bidi(text)  # letters of right-to-left scripts order themselves: only the controls are refused


def test_every_free_text_field_is_classified_and_the_free_text_ones_carry_the_validator():
    found = dict(text_fields())
    classified = FREE_TEXT | OWN_PATTERN | OUTPUT_ONLY
    assert sorted(set(found) - classified) == [], "new text fields: put each in FREE_TEXT, OWN_PATTERN or OUTPUT_ONLY"
    assert sorted(classified - set(found)) == [], "classified fields that no longer exist"
    assert sorted(path for path in FREE_TEXT if no_bidi not in found[path].validators) == []


def api(client, url, data, method="post"):
    client.raise_request_exception = False
    return getattr(client, method)(url, data, content_type="application/json")


@pytest.fixture
def tank(local_host):
    now = timezone.now()
    pool = Pool.objects.create(host=local_host, name="tank", guid="1", state="ONLINE", observed_at=now)
    tank = Dataset.objects.create(
        host=local_host, pool=pool, name="tank", type="filesystem", mountpoint="/tank", observed_at=now
    )
    Dataset.objects.create(
        host=local_host,
        pool=pool,
        name="tank/data",
        type="filesystem",
        depth=1,
        mountpoint="/tank/data",
        available=40 << 30,
        observed_at=now,
    )
    Snapshot.objects.create(dataset=tank, name="s1", created_at=now)
    for name in ("eth0", "eth1"):
        Link.objects.create(
            host=local_host, name=name, kind="ether", mac="52:54:00:00:00:01", mtu=1500, state="UP", observed_at=now
        )
    return local_host


SCHEDULE = {
    "host": "local",
    "name": "nightly",
    "profiles": ["seq-write-1"],
    "target": "tank/data",
    "minute": "0",
    "hour": "3",
    "day_of_week": "*",
}
CHANNEL = {"name": "ops", "kind": "webhook", "url": "https://hooks.example.org/x", "min_level": "warning"}


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200f"])
@pytest.mark.parametrize(
    ("url", "body", "field", "rows"),
    [
        ("/api/v1/benchmark-profiles/", {"based_on": "randread-4k", "title": "mine"}, "title", CustomProfile),
        ("/api/v1/benchmark-profiles/", {"based_on": "randread-4k", "title": "mine"}, "represents", CustomProfile),
        ("/api/v1/benchmark-schedules/", SCHEDULE, "name", Schedule),
        (
            "/api/v1/tunables/",
            {"host": "local", "kind": "sysctl", "key": "vm.swappiness", "value": "10"},
            "reason",
            Setting,
        ),
        ("/api/v1/alert-channels/", CHANNEL, "name", Channel),
        (
            "/api/v1/nfs-exports/",
            {"host": "local", "dataset": "tank/data", "clients": "10.0.0.0/24"},
            "comment",
            NfsExport,
        ),
    ],
)
def test_the_api_refuses_direction_controls_in_free_text_naming_the_field(
    admin_client, tank, char, url, body, field, rows
):
    response = api(admin_client, url, {**body, field: f"night{char}ly"})
    assert response.status_code == 400, response.content
    assert "direction control" in str(response.json()[field]), response.json()
    assert not rows.objects.exists()


def test_the_pages_refuse_them_on_the_field(admin_client, tank):
    page = admin_client.post("/account/tokens/", {"name": "monitoring\u202e"}).content.decode()
    assert "direction control" in page and not ApiToken.objects.exists()
    copy = {"title": "mine\u2067", "rw": "randread", "bs": "4k", "size": "1g", "runtime": 30, "ramp": 5, "numjobs": 1}
    copy.update({"iodepth": 1, "ioengine": "psync", "nrfiles": 1})
    page = admin_client.post("/benchmarks/profiles/copy/?from=randread-4k", copy).content.decode()
    assert "direction control" in page and not CustomProfile.objects.exists()


def test_a_schedule_renamed_through_the_api_is_refused_too(admin_client, tank):
    created = api(admin_client, "/api/v1/benchmark-schedules/", SCHEDULE)
    assert created.status_code == 201, created.content
    url = f"/api/v1/benchmark-schedules/{created.json()['id']}/"
    assert api(admin_client, url, {"name": "\u202enightly"}, method="patch").status_code == 400
    assert Schedule.objects.get().name == "nightly"


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/v1/hosts/", {"name": "nas1", "address": "192.0.2.9"}, "name"),
        ("/api/v1/pools/", {"host": "local", "name": "p", "data": [{"kind": "stripe", "disks": ["/dev/x"]}]}, "name"),
        ("/api/v1/datasets/", {"host": "local", "name": "tank/new"}, "name"),
        ("/api/v1/snapshots/", {"host": "local", "dataset": "tank/data", "name": "s2"}, "name"),
        ("/api/v1/smb-shares/", {"host": "local", "name": "docs", "dataset": "tank/data"}, "name"),
        ("/api/v1/smb-shares/", {"host": "local", "name": "docs", "dataset": "tank/data"}, "comment"),
        ("/api/v1/nfs-exports/", {"host": "local", "dataset": "tank/data", "clients": "10.0.0.0/24"}, "comment"),
        ("/api/v1/links/bridge/", {"host": "local", "name": "br0", "ports": ["eth0", "eth1"]}, "name"),
        ("/api/v1/links/bridge-delete/", {"host": "local", "name": "br0", "confirm": "br0"}, "name"),
    ],
)
def test_names_with_their_own_pattern_refuse_direction_controls_too(admin_client, tank, url, body, field):
    value = "ab\u202ecd" if field != "name" or "datasets" not in url else "tank/ab\u202ecd"
    response = api(admin_client, url, {**body, field: value})
    assert response.status_code == 400, (url, field, response.content)
    assert field in response.json(), response.json()
    assert not SmbShare.objects.exists() and not NfsExport.objects.exists() and Host.objects.count() == 1
