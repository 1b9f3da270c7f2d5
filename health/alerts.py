"""Disk health's alert rules, asked at every evaluation from the last reads (no disk is touched for them):
registered with analytics from HealthConfig.ready(). Each is raised once per disk and cleared when it ends."""

from analytics.choices import Level, Rule
from analytics.hooks import alert_source
from health import selectors
from health.choices import HealthState
from hostlib.smart import NVME_WARNINGS, WATCHED

FAILED = Rule("smart_failed", "Disk failing", Level.CRITICAL, help="The drive's own SMART assessment is FAILING.")
SECTORS = Rule(
    "smart_sectors",
    "Disk sectors going bad",
    Level.WARNING,
    help="SMART 5, 187, 188, 197 or 198 raw above zero or rising (Backblaze: these precede failures).",
)
NVME = Rule(
    "nvme_warning",
    "NVMe critical warning",
    Level.CRITICAL,
    help="A critical warning bit, spare capacity below its threshold, or media and integrity errors.",
)
WEAR = Rule("nvme_wear", "NVMe worn", Level.WARNING, 80, "%", 10, 100, "Percentage of rated endurance used.")
HOT = Rule(
    "disk_hot",
    "Disk too hot",
    Level.WARNING,
    60,
    "°C",
    30,
    90,
    "Above the drive's own limit; this for a drive that states none.",
)
SELF_TEST = Rule("self_test_failed", "Self-test failed", Level.CRITICAL, help="The newest finished self-test failed.")
SILENT = Rule("disk_silent", "Disk not answering", Level.CRITICAL, help="A disk that answered before no longer does.")


@alert_source(FAILED, SECTORS, NVME, WEAR, HOT, SELF_TEST, SILENT)
def disk_conditions(*, host, now, active):
    for disk in selectors.disks_read(host=host):
        yield from _disk(disk, host, active)


def _disk(disk, host, active):
    where = f"{disk.device} ({disk.model or 'disk'} {disk.serial}) on {host.name}"
    subject = disk.serial or disk.device
    if disk.power == HealthState.SILENT and disk.answered_at:
        yield SILENT.key, subject, f"{where} no longer answers: {disk.power_note[:200]}"
    if disk.state not in (HealthState.OK, HealthState.WATCH, HealthState.FAILING):
        return  # never answered, or without SMART: nothing is known to judge
    # Asleep or silent now: the figures it last gave still hold (a failing disk that spins down is still failing).
    if disk.passed is False or "failing" in disk.flags:
        yield FAILED.key, subject, f"{where}: the drive's own SMART assessment is FAILING."
    bad = {a["id"]: a["raw"] for a in disk.attributes if a["id"] in WATCHED and a["raw"] > 0}
    if bad:
        rising = [i for i in bad if f"attr{i}" in disk.rising]
        words = ", ".join(f"{WATCHED[i]} ({i}) {raw}" for i, raw in sorted(bad.items()))
        yield SECTORS.key, subject, f"{where}: {words}" + (" — rising" if rising else "")
    warning = disk.nvme.get("critical_warning") or 0
    spare, spare_min = disk.nvme.get("available_spare"), disk.nvme.get("available_spare_threshold")
    said = [words for bit, words in NVME_WARNINGS if warning & bit]
    if spare is not None and spare_min is not None and spare < spare_min and not warning & 0x01:
        said.append(f"available spare {spare}% below its threshold {spare_min}%")
    if disk.nvme.get("media_errors"):  # held while there are any, not only at the read that saw them rise
        rising = " and rising" if "media_errors" in disk.rising else ""
        said.append(f"{disk.nvme['media_errors']} media and integrity errors{rising}")
    if said:
        yield NVME.key, subject, f"{where}: NVMe critical warning: {'; '.join(said)}."
    used = disk.nvme.get("percentage_used")
    if WEAR.key in active and used is not None and used >= active[WEAR.key].threshold:
        yield WEAR.key, subject, f"{where}: {used}% of its rated endurance used."
    if HOT.key in active and disk.temperature is not None:
        limit = disk.temp_warn or active[HOT.key].threshold
        if disk.temperature > limit:
            yield HOT.key, subject, f"{where} is at {disk.temperature} °C, above {limit:.0f} °C."
    last = next((t for t in disk.self_tests if t.get("passed") is not None), None)
    if last and last["passed"] is False:
        yield SELF_TEST.key, subject, f"{where}: the last self-test failed ({last['kind']}: {last['status']})."
