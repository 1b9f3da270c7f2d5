"""`make perf`: prints `name value unit (goal)` per figure. `python -m tests.perf storage` runs one group."""

import sys

from tests.perf import (
    analytics,
    audit,
    backups,
    benchmarks,
    directory,
    encryption,
    foundation,
    health,
    https,
    lab,
    permissions,
    replication,
    shares,
    storage,
    tuning,
)

GROUPS = {
    "foundation": foundation.CHECKS,
    "lab": lab.CHECKS,
    "storage": storage.CHECKS,
    "shares": shares.CHECKS,
    "audit": audit.CHECKS,
    "tuning": tuning.CHECKS,
    "benchmarks": benchmarks.CHECKS,
    "analytics": analytics.CHECKS,
    "replication": replication.CHECKS,
    "health": health.CHECKS,
    "encryption": encryption.CHECKS,
    "backups": backups.CHECKS,
    "https": https.CHECKS,
    "directory": directory.CHECKS,
    "permissions": permissions.CHECKS,
}
# Checks run only when named (`encryption.check`: a tiny version of the group, to see that its path works).
QUICK = {"encryption": encryption.QUICK}


def main(chosen: list[str]) -> int:
    """Arguments: groups (`benchmarks`) or single checks (`benchmarks.l2arc_figures`); none: every group."""
    for arg in chosen or GROUPS:
        group, _, only = arg.partition(".")
        for check in GROUPS[group] + (QUICK.get(group, []) if only else []):
            if only and check.__name__ != only:
                continue
            for name, value, unit, goal in check():
                print(f"{name} {value:.2f} {unit} ({goal})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
