"""Issue 3 figures: cold build and cold boot (recorded when the cache was made), restore to SSH, reset,
and Tarn's SSH run(["true"]) latency to the guest."""

import statistics
import subprocess
import time
from pathlib import Path

from tests.perf.foundation import _median_ms
from tests.support.lab import LAB_SH, lab_missing_reason, lab_up


def _recorded(pattern: str, name: str) -> float | None:
    files = sorted(Path("/var/cache/tarn-lab").glob(f"{pattern}/{name}"))
    return float(files[-1].read_text()) if files else None


def lab_figures():
    reason = lab_missing_reason()
    if reason:
        print(f"# lab figures skipped: {reason}")
        return
    lab_up()  # builds and saves the golden guest if the cache is cold
    build = _recorded("image-*", "build-seconds")
    if build is not None:
        yield "lab_cold_build", build, "s", "recorded when the image was built; reference ~330-600 s"
    boot = _recorded("golden-*", "boot-seconds")
    if boot is not None:
        yield "lab_cold_boot_to_ssh", boot, "s", "recorded when the golden guest was saved; reference ~32 s"
    subprocess.run([str(LAB_SH), "down"], check=True, capture_output=True)
    started = time.monotonic()
    lab = lab_up()
    yield "lab_restore_to_ssh", time.monotonic() - started, "s", "cached image + saved guest; reference ~8 s"
    resets = [lab.reset() for _ in range(3)]
    yield "lab_reset_median", statistics.median(resets), "s", "loadvm; reference 3-5 s"
    t = lab.transport()
    yield (
        "lab_ssh_run_true_median",
        _median_ms(lambda: t.run(["true"]), n=20),
        "ms",
        "shared connection; reference ~200 ms",
    )
    t.close()


CHECKS = [lab_figures]
