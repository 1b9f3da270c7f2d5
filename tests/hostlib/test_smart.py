"""smartctl's JSON as real drives and the lab's disks print it (tests/fixtures/host/smart: real/ from public test
data of other projects, with SOURCES.md; lab/ captured from the lab guest by tests/support/capture_fixtures.py), its
exit status decoded, and what Tarn makes of each read."""

import json
from pathlib import Path

import pytest

from hostlib import smart

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "smart"


def reading(name: str) -> smart.Reading:
    text = (FIXTURES / name).read_text()
    return smart.parse(text, json.loads(text)["smartctl"]["exit_status"])


def test_every_exit_status_bit_is_named():
    assert smart.decode_exit(0) == []
    assert smart.decode_exit(216) == ["failing", "prefail", "error_log", "self_test_log"]  # 8 + 16 + 64 + 128
    assert smart.decode_exit(2) == ["open"]
    assert len(smart.EXIT_BITS) == 8


def test_a_failing_hdd_is_failing_for_its_assessment_its_attribute_and_its_sectors():
    r = reading("real/ata-hdd-failing-smart-status.json")
    assert r.passed is False and "failing" in r.flags and r.protocol == "ATA"
    five = next(a for a in r.attributes if a.id == 5)
    assert (five.raw, five.when_failed, five.prefailure) == (1975, "now", True)
    state, reasons = smart.judge(r)
    assert state == "failing"
    assert "the drive's own assessment is FAILING" in reasons
    assert "reallocated sectors (5): 1975" in reasons and "pending sectors (197): 8" in reasons


def test_an_aborted_self_test_has_no_verdict_and_the_last_one_with_a_verdict_counts():
    """smartctl leaves out "passed" for a test aborted by the host: no verdict, not a failure."""
    r = reading("real/ata-megaraid-aborted-selftest-realloc.json")
    newest = r.self_tests[0]
    assert (newest.status, newest.passed) == ("Aborted by host", None)
    assert r.self_tests[1].passed is True
    state, reasons = smart.judge(r)
    assert state == "watch" and reasons == ["reallocated sectors (5): 387"]
    assert r.flags == ["command"]  # exit status 4: a SMART command failed behind the RAID controller


def test_the_extended_self_test_log_is_read_where_the_standard_one_is_missing():
    r = reading("real/ata-ssd-xall-extended-selftest-log.json")
    doc = json.loads((FIXTURES / "real/ata-ssd-xall-extended-selftest-log.json").read_text())
    assert "standard" not in doc["ata_smart_self_test_log"]
    assert len(r.self_tests) == len(doc["ata_smart_self_test_log"]["extended"]["table"]) > 0
    assert r.rotation == 0 and r.temp_warn == 70  # solid state; the drive's own limit from its SCT status
    assert smart.judge(r) == ("ok", [])


def test_an_nvme_critical_warning_bit_is_failing_and_its_health_log_is_kept():
    r = reading("real/nvme-critical-warning-failed.json")
    assert r.nvme["critical_warning"] == 16 and r.nvme["available_spare"] == 100
    state, reasons = smart.judge(r)
    assert state == "failing"
    assert "NVMe critical warning: volatile memory backup failed" in reasons


def test_an_nvme_drive_without_a_self_test_table_has_an_empty_history_and_can_run_tests():
    r = reading("real/nvme-selftest-log-no-table.json")
    assert r.self_tests == [] and r.testing is None and r.self_test_kinds == ["short", "long"]
    assert r.error_count == 4871 and smart.judge(r) == ("ok", [])  # error-log entries alone are common and harmless
    worn = smart.judge(r, wear_limit=4)
    assert worn == ("watch", ["4% of its rated endurance used"])


def test_a_sleeping_disk_is_asleep_with_its_power_mode_and_nothing_else_read():
    """smartctl -n standby stops after CHECK POWER MODE with `Device is in STANDBY mode, exit(2)` (ataprint.cpp);
    QEMU's disks always answer "active", so this shape is smartctl's own words around exit status 2."""
    text = json.dumps(
        {
            "json_format_version": [1, 0],
            "smartctl": {
                "version": [7, 4],
                "messages": [{"string": "Device is in STANDBY mode, exit(2)", "severity": "information"}],
                "exit_status": 2,
            },
            "device": {"name": "/dev/sda", "type": "sat", "protocol": "ATA"},
            "power_mode": {"ata_value": 0, "name": "STANDBY"},
        }
    )
    r = smart.parse(text, 2)
    assert r.asleep == "STANDBY" and r.attributes == [] and r.model == ""
    assert smart.judge(r) == ("asleep", ["in STANDBY mode: not woken to be read"])


def test_text_that_is_not_json_keeps_its_last_line_and_a_silent_disk_says_why():
    r = smart.parse("smartctl: something broke\nSmartctl open device: /dev/sdz failed: No such device\n", 2)
    assert r.flags == ["open"] and r.messages == ["Smartctl open device: /dev/sdz failed: No such device"]
    assert smart.judge(r) == ("silent", ["Smartctl open device: /dev/sdz failed: No such device"])


def test_the_scan_lists_devices_with_their_types():
    disks = smart.parse_scan((FIXTURES / "real/scan-simple.json").read_text())
    assert [d.device for d in disks][:2] == ["/dev/sda", "/dev/sdb"] and {d.type for d in disks} == {"scsi"}


@pytest.mark.parametrize(
    "device",
    ["sda", "/dev/../etc/passwd", "/dev/sda;reboot", "-a", "/dev/", "/dev/sda b", "/dev/\u0663"],
)
def test_a_device_that_is_not_a_plain_path_under_dev_is_refused(device):
    with pytest.raises(smart.SmartError, match="device"):
        smart.read_argv(device)


def test_the_argv_reads_without_waking_and_puts_the_device_after_double_dash():
    assert smart.read_argv("/dev/sda", "sat") == [
        "smartctl",
        "-n",
        "standby",
        "-j",
        "-x",
        "-d",
        "sat",
        "--",
        "/dev/sda",
    ]
    assert smart.self_test_argv("/dev/nvme0", "long")[-3:] == ["long", "--", "/dev/nvme0"]
    with pytest.raises(smart.SmartError, match="kind"):
        smart.self_test_argv("/dev/sda", "conveyance")
    with pytest.raises(smart.SmartError, match="device type"):
        smart.read_argv("/dev/sda", "sat; reboot")


def test_a_usb_bridge_smartctl_does_not_know_is_no_smart_not_a_silent_disk():
    """smartctl's words for it (scsiata.cpp: set_err "Unknown USB bridge %s", printed as `<dev>: <error>`); a
    bridge cannot be plugged into the lab, so the message is smartctl's own around its exit status 1."""
    text = json.dumps(
        {
            "json_format_version": [1, 0],
            "smartctl": {
                "version": [7, 4],
                "messages": [{"string": "/dev/sdc: Unknown USB bridge [0x152d:0x0578 (0x508)]", "severity": "error"}],
                "exit_status": 1,
            },
        }
    )
    r = smart.parse(text, 1)
    assert smart.judge(r) == ("unsupported", ["no SMART data (Unknown USB bridge [0x152d:0x0578 (0x508)])"])


VIRTIO = "a virtio disk: virtio disks report no SMART (watch the physical disk on the host that runs this VM)"


def test_the_labs_disks_as_captured():
    """QEMU's SATA disks: SMART passed, exit status 4 (-x asks for logs QEMU does not have: a command failed, which is
    not a finding), self-tests possible; its NVMe drive: a health log, no self-tests (QEMU has none); with critical
    warning 4 set through the monitor: FAILING by its own assessment and the reliability bit; virtio: no SMART."""
    hdd = reading("lab/sata-hdd.json")
    assert (hdd.model, hdd.serial, hdd.rotation, hdd.passed, hdd.flags) == (
        "TarnLab HDD",
        "TARNSATA1",
        7200,
        True,
        ["command"],
    )
    assert smart.judge(hdd) == ("ok", []) and hdd.self_test_kinds == ["short", "long"]
    after = reading("lab/sata-hdd-after-short-test.json")
    assert after.self_tests[0].kind == "Short offline" and after.self_tests[0].passed is True
    nvme = reading("lab/nvme.json")
    assert nvme.protocol == "NVMe" and nvme.nvme["critical_warning"] == 0 and nvme.self_test_kinds == []
    assert smart.judge(nvme) == ("ok", [])
    warned = reading("lab/nvme-critical-warning-4.json")
    assert warned.flags == ["failing"] and smart.judge(warned)[0] == "failing"
    virtio = reading("lab/virtio.json")
    assert smart.judge(virtio) == ("unsupported", [VIRTIO])  # said plainly, not smartctl's "Unable to detect …"
    scanned = smart.parse_scan((FIXTURES / "lab/scan-open.json").read_text())
    assert [(d.device, d.type) for d in scanned] == [("/dev/sda", "sat"), ("/dev/sdb", "sat"), ("/dev/nvme0", "nvme")]
    listed = smart.parse_scan((FIXTURES / "lab/scan.json").read_text())  # without opening: SATA looks like SCSI
    assert [(d.device, d.type) for d in listed] == [("/dev/sda", "scsi"), ("/dev/sdb", "scsi"), ("/dev/nvme0", "nvme")]
