"""`make perf`: prints `name value unit (goal)` per figure. `python -m tests.perf storage` runs one group."""

import importlib
import pkgutil
import sys
from pathlib import Path

# Every module of this package with CHECKS is a group, named after it (a new app's figures count the day its module
# is added): the foundation's and the lab's first, the rest by name.
_FIRST = ("foundation", "lab")
_MODULES = {
    name: importlib.import_module(f"tests.perf.{name}")
    for _, name, _ in pkgutil.iter_modules([str(Path(__file__).parent)])
    if not name.startswith("_")
}
GROUPS = {
    name: _MODULES[name].CHECKS
    for name in sorted(_MODULES, key=lambda n: (_FIRST.index(n) if n in _FIRST else len(_FIRST), n))
    if hasattr(_MODULES[name], "CHECKS")
}
# Checks run only when named (`encryption.check`: a tiny version of the group, to see that its path works).
QUICK = {name: module.QUICK for name, module in _MODULES.items() if hasattr(module, "QUICK")}


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
