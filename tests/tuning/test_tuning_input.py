"""Tuning input: bad values are a 400 naming the field and nothing is started; the pages render what the
inventory holds (links, drift, a pending change's countdown, the measured effect)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from appliance.models import Operation
from tests.support.pages import shown_again
from tuning.models import ChangeSet, KernelState, Link, Setting


@pytest.fixture
def inventory(local_host):
    now = timezone.now()
    for name, kind, management, cidrs in (
        ("eth0", "ether", True, ["192.0.2.10/24"]),
        ("eth1", "ether", False, []),
        ("eth2", "ether", False, []),
    ):
        Link.objects.create(
            host=local_host,
            name=name,
            kind=kind,
            mac=f"52:54:00:00:00:0{name[-1]}",
            mtu=1500,
            min_mtu=68,
            max_mtu=9000,
            state="UP",
            up=True,
            management=management,
            observed_at=now,
            addresses=[{"cidr": c, "family": "inet", "dynamic": False, "scope": "global"} for c in cidrs],
        )
    KernelState.objects.create(
        host=local_host,
        observed_at=now,
        sysctl={"net.core.rmem_max": "212992", "net.ipv4.tcp_rmem": "4096 131072 6291456", "vm.swappiness": "60"},
        zfs={"zfs_txg_timeout": "5"},
    )
    return local_host


def post(client, url, data):
    return client.post(url, data, content_type="application/json")


@pytest.mark.parametrize(
    ("url", "data", "field"),
    [
        ("/api/v1/links/mtu/", {"link": "eth1", "mtu": 9001}, "mtu"),
        ("/api/v1/links/mtu/", {"link": "eth1", "mtu": "jumbo"}, "mtu"),
        ("/api/v1/links/mtu/", {"link": "../eth1", "mtu": 9000}, "link"),
        ("/api/v1/links/mtu/", {"link": "-eth1", "mtu": 9000}, "link"),
        ("/api/v1/links/mtu/", {"link": "eth 1", "mtu": 9000}, "link"),
        ("/api/v1/links/mtu/", {"link": "eth9", "mtu": 9000}, "link"),
        ("/api/v1/links/mtu/", {"link": "eth1", "mtu": 9000, "peers": ["10.0.0.1; reboot"]}, "peers"),
        ("/api/v1/links/mtu/", {"link": "eth1", "mtu": 9000, "seconds": 5}, "seconds"),
        ("/api/v1/links/bridge/", {"name": "br0", "ports": ["eth0", "eth1"]}, "management_ok"),
        ("/api/v1/links/bridge/", {"name": "-br0", "ports": ["eth1", "eth2"]}, "name"),
        ("/api/v1/links/bridge/", {"name": "br/0", "ports": ["eth1", "eth2"]}, "name"),
        ("/api/v1/links/bridge/", {"name": "eth1", "ports": ["eth1", "eth2"]}, "name"),
        ("/api/v1/links/bridge/", {"name": "br0", "ports": ["eth1", ".."]}, "ports"),
        ("/api/v1/links/bond/", {"name": "bond0", "ports": ["eth1"]}, "ports"),  # one NIC is no failover
        ("/api/v1/links/bond/", {"name": "bond0", "ports": ["eth0", "eth1"]}, "ports"),  # the management link
        ("/api/v1/links/bond/", {"name": "bond0", "ports": ["eth1", "eth2"], "mode": "balance-rr"}, "mode"),
        ("/api/v1/links/bond/", {"name": "bond0", "ports": ["eth1", "eth2"], "miimon": 5}, "miimon"),
        ("/api/v1/links/bond/", {"name": "bond0", "ports": ["eth1", "eth2"], "lacp_rate": "fast"}, "lacp_rate"),
        ("/api/v1/links/bond/", {"name": "bond 0", "ports": ["eth1", "eth2"]}, "name"),
        ("/api/v1/links/vlan/", {"link": "eth1", "vid": 0}, "vid"),
        ("/api/v1/links/vlan/", {"link": "eth1", "vid": 4095}, "vid"),
        ("/api/v1/links/vlan/", {"link": "eth1", "vid": 4096}, "vid"),
        ("/api/v1/links/vlan/", {"link": "lo", "vid": 42}, "link"),
        ("/api/v1/links/vlan/", {"link": "eth1", "vid": 42, "addresses": ["192.0.2.10/24"]}, "addresses"),
        ("/api/v1/links/vlan/", {"link": "eth1", "vid": 42, "addresses": ["10.9.9.9"]}, "addresses"),
        ("/api/v1/links/vlan/", {"link": "eth1", "vid": 42, "name": "eth1.42; reboot"}, "name"),
        ("/api/v1/links/bond-delete/", {"name": "eth1", "confirm": "eth1"}, "name"),
        ("/api/v1/links/vlan-delete/", {"name": "eth1", "confirm": "eth1"}, "name"),
        ("/api/v1/tunables/", {"kind": "sysctl", "key": "kernel.panic", "value": "1"}, "key"),
        ("/api/v1/tunables/", {"kind": "sysctl", "key": "net.core.rmem_max", "value": "1 | reboot"}, "value"),
        ("/api/v1/tunables/", {"kind": "sysctl", "key": "net.core.rmem_max", "value": "1;2"}, "value"),
        ("/api/v1/tunables/", {"kind": "sysctl", "key": "net.core.rmem_max", "value": "1\n2"}, "value"),
        ("/api/v1/tunables/", {"kind": "sysctl", "key": "net.core.rmem_max", "value": "big number"}, "value"),
        ("/api/v1/tunables/", {"kind": "sysctl", "key": "net.ipv4.tcp_rmem", "value": "4096 8192"}, "value"),
        ("/api/v1/tunables/", {"kind": "sysctl", "key": "net.core.nope", "value": "1"}, "key"),
        ("/api/v1/tunables/", {"kind": "zfs", "key": "zfs_no_such_parameter", "value": "1"}, "key"),
        ("/api/v1/change-sets/", {"profile": "turbo"}, "profile"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_starts(admin_client, inventory, url, data, field):
    response = post(admin_client, url, {"host": inventory.name, **data})
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Operation.objects.exists() and not ChangeSet.objects.exists()


@pytest.mark.parametrize(
    ("url", "data", "form_id", "said"),
    [
        (
            "/tuning/links/mtu/",
            {"link": "eth1", "mtu": "70000", "seconds": 60},
            "mtu-form",
            "less than or equal to 65535",
        ),
        ("/tuning/links/mtu/", {"link": "eth9", "mtu": "9000", "seconds": 60}, "mtu-form", "local has no link eth9"),
        (
            "/tuning/settings/",
            {"kind": "sysctl", "key": "kernel.panic", "value": "1"},
            "setting-form",
            "is not net.core",
        ),
        ("/tuning/bridges/", {"name": "eth1", "ports": ["eth2"], "seconds": 60}, "bridge-form", "already"),
        (
            "/tuning/bonds/",
            {"name": "bond0", "ports": ["eth1"], "mode": "active-backup", "miimon": "100", "seconds": 60},
            "bond-form",
            "two NICs at least",
        ),
        (
            "/tuning/bonds/",
            {
                "name": "bond0",
                "ports": ["eth1", "eth2"],
                "mode": "active-backup",
                "miimon": "100",
                "lacp_rate": "fast",
                "seconds": 60,
            },
            "bond-form",
            "For mode 802.3ad (LACP) only",
        ),
        ("/tuning/vlans/", {"link": "eth1", "vid": "4095", "seconds": 60}, "vlan-form", "less than or equal to 4094"),
        ("/tuning/vlans/", {"link": "lo", "vid": "42", "seconds": 60}, "vlan-form", "local has no link lo"),
        (
            "/tuning/vlans/",
            {"link": "eth1", "vid": "42", "addresses": "192.0.2.10/24", "seconds": 60},
            "vlan-form",
            "192.0.2.10/24 (eth0) already",
        ),
        ("/tuning/plan/", {"profile": "turbo"}, "plan-form", "Select a valid choice. turbo"),
    ],
)
def test_the_html_forms_say_the_same_under_the_field_and_change_nothing(
    admin_client, inventory, url, data, form_id, said
):
    """The form's own refusal (mtu, profile) and the service's naming a field (link, key, name) come back on the
    overview inside the form that asked; nothing starts."""
    form = shown_again(admin_client.post(url, data), form_id)
    assert said in form, form
    assert not Operation.objects.exists() and not ChangeSet.objects.exists()


@pytest.mark.parametrize(
    ("url", "data", "form_id", "kept"),
    [
        ("/tuning/links/mtu/", {"link": "eth2", "mtu": "9000", "seconds": 60}, "mtu-form", "<option selected>eth2"),
        ("/tuning/bridges/", {"name": "br0", "ports": ["eth1", "eth2"], "seconds": 60}, "bridge-form", 'value="br0"'),
    ],
)
def test_a_refusal_no_field_could_fix_stays_on_the_form_above_its_fields(
    admin_client, inventory, url, data, form_id, kept
):
    """A change waiting for Keep names none of the form's fields: it is said at the top of the form that asked, the
    form open as posted (400), not as a message over a page with the form reset."""
    pending = ChangeSet.objects.create(host=inventory, kind="mtu", title="MTU 9000 on eth1", status="pending")
    form = shown_again(admin_client.post(url, data), form_id)
    assert '<p class="error">A network change is waiting for Keep or its rollback' in form, form
    assert kept in form, form  # what was posted
    assert not Operation.objects.exists() and list(ChangeSet.objects.all()) == [pending]


@pytest.fixture
def bridge(inventory):
    Link.objects.filter(host=inventory, name__in=["eth1", "eth2"]).update(master="br0")
    return Link.objects.create(host=inventory, name="br0", kind="bridge", mtu=1500, observed_at=timezone.now())


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"name": "br0", "confirm": "br1", "seconds": 60}, "Type the bridge's name (br0) to delete it."),
        ({"name": "eth1", "confirm": "eth1", "seconds": 60}, "eth1 is not a bridge."),
        ({"name": "br0", "confirm": "", "seconds": 60}, "confirm: This field is required."),
    ],
)
def test_a_refused_bridge_delete_is_a_message_on_the_overview(admin_client, bridge, data, said):
    """A bridge row's button has no form to show again: its refusal, the service's or the form's, is a message."""
    response = admin_client.post("/tuning/bridges/delete/", data)
    assert response.status_code == 302 and response.url == "/tuning/", response
    page = admin_client.get(response.url).content.decode()
    assert said.replace("'", "&#x27;") in page, page
    assert not Operation.objects.exists() and not ChangeSet.objects.exists()


def test_deleting_a_bridge_goes_to_its_change(admin_client, bridge, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = admin_client.post("/tuning/bridges/delete/", {"name": "br0", "confirm": "br0", "seconds": 60})
    cs = ChangeSet.objects.get()
    assert response.status_code == 302 and response.url == f"/tuning/changes/{cs.pk}/", response
    assert (cs.kind, cs.title, cs.target["ports"]) == ("unbridge", "Delete bridge br0", ["eth1", "eth2"])


def test_planning_queues_a_read_only_operation_and_a_planned_change_set(admin_client, inventory, run_queued):
    response = post(admin_client, "/api/v1/change-sets/", {"host": inventory.name, "profile": "wan"})
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["status"], body["title"]) == ("planning", "Base tuning: WAN / replication")
    op = Operation.objects.get(pk=body["operation"])
    assert (op.kind, op.status, op.target) == ("tuning.plan", "queued", f"host:{inventory.name}:tuning:plan")


def test_the_tuning_page_shows_links_drift_and_a_pending_change(admin_client, inventory):
    cs = ChangeSet.objects.create(
        host=inventory,
        kind="mtu",
        title="MTU 9000 on eth1",
        status="pending",
        deadline=timezone.now() + timedelta(seconds=45),
        restore_unit="tarn-restore-1",
    )
    done = ChangeSet.objects.create(
        host=inventory,
        kind="profile",
        title="Base tuning: 10G LAN",
        status="applied",
        before={"from_host": {"bps": 2.5e8}},
        after={"from_host": {"bps": 1.1e9}},
    )
    Setting.objects.create(
        change_set=done,
        host=inventory,
        kind="sysctl",
        key="vm.swappiness",
        original="60",
        value="10",
        active=True,
        reason="Keep Tarn resident",
    )
    page = admin_client.get("/tuning/").content.decode()
    assert "eth0" in page and "192.0.2.10/24" in page and "68–9000" in page
    assert "MTU 9000 on eth1</strong> is waiting for Keep" in page
    assert "vm.swappiness</code>: Tarn set 10, the host has 60" in page  # drift: the host still says 60
    assert "From 4.40×" in page
    detail = admin_client.get(f"/tuning/changes/{cs.pk}/").content.decode()
    assert 'data-deadline="' in detail and 'id="keep"' in detail and "even if Tarn or its link is gone" in detail
    effect = admin_client.get(f"/tuning/changes/{done.pk}/").content.decode()
    assert 'data-chart="effect-data"' in effect and "4.40×" in effect
