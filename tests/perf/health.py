"""Issue 25 figures: a health pass's cost in Tarn (captured lab outputs replayed through the real parser and store,
6 to 48 disks: linear?) and on the lab's real disks; what a poll does to a disk that may sleep (QEMU's own trace of
the ATA commands each SATA disk is sent: CHECK POWER MODE must come first, before anything that would spin it up);
and a degraded pool's alert, from the fault to a real HTTP receiver, with the sampler running at its beat."""

import json
import re
import statistics
import threading
import time
from pathlib import Path

from tests.perf.foundation import admin_session_cookie, lab_host, run_operations_inline

SMART = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "smart"
POLLS = 100
CHECK_POWER_MODE = 0xE5


def _replayed_host(disks: int):
    """A host row and a transport answering smartctl with the lab's captured SATA output for `disks` disks."""
    from appliance.models import Host
    from tests.support.runners import FakeHost

    host, _ = Host.objects.get_or_create(name=f"perf-health-{disks}", defaults={"address": "perf.example"})
    scan = json.loads((SMART / "lab/scan.json").read_text())
    names = [f"/dev/sd{chr(97 + i // 26) if i >= 26 else ''}{chr(97 + i % 26)}" for i in range(disks)]
    scan["devices"] = [{"name": n, "info_name": n, "type": "scsi", "protocol": "SCSI"} for n in names]
    fake = FakeHost()
    fake.answer("smartctl", "--scan", stdout=json.dumps(scan))
    fake.answer("smartctl", "--scan-open", stdout=json.dumps(scan).replace('"scsi"', '"sat"'))
    fake.answer("smartctl", "-n", "standby", stdout=(SMART / "lab/sata-hdd.json").read_text(), returncode=4)
    return host, fake.transport(read_only=True)


def pass_figures():
    admin_session_cookie()  # migrates the perf database
    from health.services import health_read

    seconds = {}
    for disks in (6, 12, 24, 48):
        host, t = _replayed_host(disks)
        health_read(host=host, transport=t)  # the rows exist: later passes update, as they do on a NAS
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            health_read(host=host, transport=t)
            runs.append(time.perf_counter() - started)
        seconds[disks] = statistics.median(runs)
        yield f"health_pass_{disks}_disks", seconds[disks] * 1000, "ms", "replayed lab output: Tarn's parse and store"
    yield "health_pass_24_disks_goal", seconds[24], "s", "goal <= 5 s of Tarn time"
    yield "health_pass_48_over_24", seconds[48] / seconds[24], "x", "goal ~2 (linear in disks)"


def lab_pass():
    found = lab_host("health")
    if found is None:
        return
    lab, host = found
    from health.models import DiskHealth
    from health.services import health_read
    from pools.services import inventory_refresh

    lab.nvme(True)
    try:
        inventory_refresh(host=host)
        health_read(host=host)  # first: every virtio disk asked whether it has SMART (then once a day)
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            record = health_read(host=host)
            runs.append(time.perf_counter() - started)
        states = sorted(DiskHealth.objects.filter(host=host).values_list("state", flat=True))
        yield "health_lab_pass", statistics.median(runs), "s", f"{record.disks} disks read over SSH, TCG guest"
        yield "health_lab_disks_with_smart", states.count("ok"), "disks", "goal 3 (2 SATA, 1 NVMe)"
    finally:
        lab.nvme(False)


def _ata_commands(log: Path) -> list[tuple[str, int]]:
    """(the IDE state a command went to: one per disk, the command) from QEMU's ide_exec_cmd trace lines."""
    found = re.findall(r"ide_exec_cmd .*?state (0x[0-9a-f]+); cmd (0x[0-9a-f]+)", log.read_text())
    return [(state, int(cmd, 16)) for state, cmd in found]


def standby_wakes():
    """POLLS whole health passes over the lab (the scan and every read, as beat runs them), each ATA command the
    SATA disks were sent traced at QEMU's IDE layer: how many reached a disk before its power mode was asked.
    smartctl -n standby stops right after CHECK POWER MODE when the disk sleeps, so a sleeping disk is sent that one
    command, which does not wake it (ATA: it answers from standby). QEMU's disks always answer "active", so every
    poll here goes on to read; the figure is what came before the check."""
    found = lab_host("health")
    if found is None:
        return
    lab, host = found
    from health.services import health_read
    from pools.services import inventory_refresh

    inventory_refresh(host=host)
    health_read(host=host)  # the virtio disks asked once (then once a day)
    log = Path(lab.env["LAB_RUN"]) / "ide-trace.log"
    log.unlink(missing_ok=True)
    lab.monitor(f"logfile {log}")
    before_check, checked_first, disk_polls = 0, 0, 0
    try:
        for _ in range(POLLS):
            lab.monitor("trace-event ide_exec_cmd on")
            health_read(host=host)
            lab.monitor("trace-event ide_exec_cmd off")
            by_disk: dict[str, list[int]] = {}
            for disk, cmd in _ata_commands(log):
                by_disk.setdefault(disk, []).append(cmd)
            log.write_text("")
            for commands in by_disk.values():
                first = commands.index(CHECK_POWER_MODE) if CHECK_POWER_MODE in commands else len(commands)
                before_check += first  # each one a command that would have reached a sleeping disk
                checked_first += first == 0
                disk_polls += 1
    finally:
        lab.monitor("trace-event ide_exec_cmd off")
        lab.monitor("logfile /dev/null")
    yield "standby_passes", POLLS, "passes", "whole health passes: smartctl --scan, then each disk's read"
    yield "standby_disk_polls", disk_polls, "polls", f"SATA disks x passes (goal {2 * POLLS})"
    yield "standby_polls_asking_power_mode_first", checked_first, "polls", f"goal {disk_polls}"
    yield "standby_commands_before_the_check", before_check, "commands", "goal 0: 0 disks woken"


def degraded_alert():
    """A mirror loses a disk (zpool offline) at a random moment of the sampler's 10 s cycle; the samples run as
    beat runs them (samples_due every 5 s); the alert's POST reaches a real HTTP receiver."""
    found = lab_host("health")
    if found is None:
        return
    lab, host = found
    from analytics import selectors, services
    from analytics.models import Alert, Channel
    from analytics.tasks import sample_host_task
    from pools.services import inventory_refresh
    from tests.support.receivers import http_receiver

    run_operations_inline()
    d = "/dev/disk/by-id/virtio-zfsdisk{}".format
    lab.sh(f"zpool create -f tank mirror {d(1)} {d(2)}")
    inventory_refresh(host=host)
    stop = threading.Event()

    def beat():  # analytics.tasks.samples_due every 5 s, its sample_host task run here as a worker would
        interval = selectors.sampler_setting().interval
        while not stop.is_set():
            for due in selectors.hosts_due():
                if services.sample_claim(host=due, seconds=interval + 30):
                    sample_host_task(due.pk)
            stop.wait(5)

    times = []
    with http_receiver() as (url, got, _):
        Channel.objects.create(name="perf-hook", kind="webhook", url=url, secret="s", allow_private=True)
        ticker = threading.Thread(target=beat, daemon=True)
        ticker.start()
        try:
            for i in range(3):
                time.sleep(3 + 4 * i)  # a different moment of the cycle each time
                got.clear()
                fault = time.monotonic()
                lab.sh("zpool offline tank virtio-zfsdisk2")
                while not any(b"DEGRADED" in body for _, body in got):
                    if time.monotonic() - fault > 180:
                        raise AssertionError("no alert within 180 s")
                    time.sleep(0.2)
                times.append(time.monotonic() - fault)
                lab.sh("zpool online tank virtio-zfsdisk2")
                while not any(b'"cleared"' in body for _, body in got):
                    time.sleep(0.2)
                Alert.objects.all().delete()  # a fourth raise within the hour would be held back as flapping
        finally:
            stop.set()
            ticker.join(timeout=60)
    yield "degraded_to_alert_max", max(times), "s", "goal <= 60 s, fault to the receiver (3 faults)"
    yield "degraded_to_alert_median", statistics.median(times), "s", "sampler every 10 s, then a read and the rules"


CHECKS = [pass_figures, lab_pass, standby_wakes, degraded_alert]
