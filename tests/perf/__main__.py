"""`make perf`: prints `name value unit (goal)` per figure."""

import sys

from tests.perf import foundation, lab


def main() -> int:
    for check in foundation.CHECKS + lab.CHECKS:
        for name, value, unit, goal in check():
            print(f"{name} {value:.2f} {unit} ({goal})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
