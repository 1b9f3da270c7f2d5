"""A UPS against the lab's real NUT (issue 45): NUT's dummy-ups driver plays a UPS from a state file; Tarn's host
layer configures NUT (the first guest as the primary, shutting down at low battery) and reads the state as it goes
on line → on battery → on battery with a low battery; at low battery upsmon runs Tarn's shutdown (shares stopped,
pools exported) and the guest powers off for real. The pool's label on the disk, read after the power-off, says
exported: the next import finds it clean. Two NAS on one UPS: the secondary goes first."""

import struct
import subprocess
import time

import pytest

from hostlib import nut
from hostlib.nut import Ups
from tests.lab.test_iscsi import INITIATOR_ADDR, TARGET_ADDR, addressed
from tests.support.lab import lab_running, lab_up
from tests.support.lab_fixtures import SECOND

pytestmark = pytest.mark.lab
PASSWORD, SECONDARY = "lab-monitor-password-1", "lab-secondary-pass-2"
DEV = "/etc/nut/rack.dev"
STATES = {
    "OL": "ups.status: OL\nbattery.charge: 100\nbattery.runtime: 1800\nups.load: 20\n",
    "OB": "ups.status: OB DISCHRG\nbattery.charge: 80\nbattery.runtime: 1200\nups.load: 20\n",
    "LB": "ups.status: OB DISCHRG LB\nbattery.charge: 8\nbattery.runtime: 90\nups.load: 20\n",
}
POOL_STATE = {0: "active", 1: "exported", 2: "destroyed"}


def play(guest, state: str) -> None:
    """The UPS's next state: the file dummy-ups re-reads when its modification time changes (to the second)."""
    time.sleep(1.1)
    guest.sh(f"cat > {DEV}.new <<'TXT'\n{STATES[state]}TXT\nmv {DEV}.new {DEV}")


def wait_for(t, words: set[str], seconds: float = 60, server: str = "") -> nut.Reading:
    deadline, last = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        try:
            last = nut.read(t, "rack", server)
            if words <= set(last.status):
                return last
        except Exception as exc:  # the driver or upsd still starting
            last = exc
        time.sleep(1)
    raise AssertionError(f"the UPS never said {sorted(words)}: last {last}")


def label_state(disk: str, work) -> str:
    """The pool state in the first vdev label of a guest disk (its overlay, read after the guest stopped): the
    packed nvlist's "state" pair, an XDR uint64 after the name."""
    raw = work / "disk.raw"
    subprocess.run(["qemu-img", "convert", "-O", "raw", disk, str(raw)], check=True, timeout=300)
    with open(raw, "rb") as fh:  # a whole disk given to zpool is partitioned: the first label is 1 MiB in
        label = fh.read(4 << 20)
    at = label.index(b"\x00\x00\x00\x05state\x00\x00\x00") + 12  # its length, its name padded to 4
    kind, count, value = struct.unpack(">IIQ", label[at : at + 16])
    assert (kind, count) == (8, 1), (kind, count)  # DATA_TYPE_UINT64, one
    return POOL_STATE.get(value, str(value))


def test_at_low_battery_the_nas_exports_its_pools_and_powers_off(guest, tmp_path):
    guest.sh("zpool create -f tank /dev/disk/by-id/virtio-zfsdisk1 && zfs create tank/docs && "
             "echo kept > /tank/docs/file && zpool sync tank")  # fmt: skip
    guest.sh(f"cat > {DEV} <<'TXT'\n{STATES['OL']}TXT")
    t = guest.transport()
    ups = Ups("rack", "local", PASSWORD, driver="dummy-ups", port="rack.dev")
    changed = nut.apply(t, ups)
    assert "upsmon.conf" in changed and guest.sh("stat -c %G:%a /etc/nut/upsd.users").strip() == "nut:640"
    assert wait_for(t, {"OL"}).charge == 100
    play(guest, "OB")
    reading = wait_for(t, {"OB"})
    assert reading.shown.startswith("on battery") and reading.runtime == 1200
    assert guest.sh("zpool list -H -o name").split() == ["tank"]  # on battery alone: nothing happens yet

    play(guest, "LB")
    started = time.monotonic()
    while lab_running() and time.monotonic() - started < 180:
        time.sleep(0.5)
    seconds = time.monotonic() - started
    assert not lab_running(), "the guest did not power off within 3 minutes of low battery"
    print(f"low battery to power-off: {seconds:.1f} s")
    try:
        assert label_state(f"{guest.env['LAB_RUN']}/disk1.qcow2", tmp_path) == "exported"
    finally:
        lab_up()  # the next test's guest (its reset finds a running lab)


def test_on_one_ups_the_secondary_powers_off_before_the_primary(guest, guest2, tmp_path):
    """Two NAS on one UPS: the first guest drives it (dummy-ups) and serves it on the wire to the second, its
    secondary. At low battery the primary's upsmon tells its secondaries (FSD); the secondary exports its pool and
    powers off, then the primary (HOSTSYNC: it waits for them to log out)."""
    addressed(guest, guest2)
    for g, pool in ((guest, "tank"), (guest2, "tank2")):
        g.sh(f"zpool create -f {pool} /dev/disk/by-id/virtio-zfsdisk1 && zpool sync {pool}", timeout=120)
    guest.sh(f"cat > {DEV} <<'TXT'\n{STATES['OL']}TXT")
    t1, t2 = guest.transport(), guest2.transport()
    primary = Ups("rack", "local", PASSWORD, driver="dummy-ups", port="rack.dev", listen=(TARGET_ADDR,),
                  secondary_password=SECONDARY)  # fmt: skip
    nut.apply(t1, primary)
    assert wait_for(t1, {"OL"}).charge == 100
    changed = nut.apply(t2, Ups("rack", "netclient", SECONDARY, server=TARGET_ADDR))
    assert guest2.sh("cat /etc/nut/nut.conf").strip() == "MODE=netclient" and "upsmon.conf" in changed
    assert wait_for(t2, {"OL"}, server=TARGET_ADDR).charge == 100  # the secondary reads it through the primary
    deadline = time.monotonic() + 60  # the secondary's upsmon logged in to the primary's upsd (its clients)
    while INITIATOR_ADDR not in guest.sh("upsc -c rack@localhost 2>/dev/null || true"):
        assert time.monotonic() < deadline, "the secondary never logged in to the primary's upsd"
        time.sleep(1)

    play(guest, "LB")
    started, down = time.monotonic(), {}
    while len(down) < 2 and time.monotonic() - started < 240:
        for name, overrides in (("secondary", SECOND), ("primary", None)):
            if name not in down and not lab_running(overrides):
                down[name] = time.monotonic() - started
        time.sleep(0.5)
    print(f"low battery to power-off: {down}")
    try:
        assert set(down) == {"secondary", "primary"}, f"powered off within 4 minutes: {down}"
        assert down["secondary"] < down["primary"]
        assert label_state(f"{guest2.env['LAB_RUN']}/disk1.qcow2", tmp_path) == "exported"
        assert label_state(f"{guest.env['LAB_RUN']}/disk1.qcow2", tmp_path) == "exported"
    finally:
        lab_up()
        lab_up(overrides=SECOND)
