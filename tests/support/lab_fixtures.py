"""Lab fixtures shared by the lab and browser tiers: one guest for the session, restored before every test."""

import dataclasses
import os
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import require
from tests.support import domain
from tests.support.lab import ROOT, Lab, _guests, lab_down, lab_missing_reason, lab_running, lab_up


def lab_env_file(name: str) -> dict[str, str]:
    """The TARN_LAB_* settings in lab/<name>."""
    return dict(
        line.split("=", 1)
        for line in (ROOT / "lab" / name).read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )


# A second guest from the same image and saved state, started only for the tests that ask for it (replication); its
# settings are lab/second.env's, the same TARN_LAB=2 make run uses, or those the first guest's settings name (the
# second lab lane's first guest, lab/lane2.env, names lab/lane2-second.env, whose wire ports mirror its own).
SECOND = lab_env_file(os.environ.get("TARN_LAB_SECOND_ENV") or "second.env")

# The fixtures that start a test from a saved state of their own (Lab.enter): with one of them, `guest` leaves the
# restore to it instead of restoring the clean state first.
STATE_FIXTURES = {"tank", "shared", "wire", "domain"}

# States of the second guest a test's fixture starts from that take minutes to make (the DC: ~4 min under TCG), made in
# a thread beside the session's first tests, which use only the first guest: by the time a test asks for it, it is
# there. The guest's emulation runs behind the first's meanwhile (nice 10, as the tiers that need no guest: at nice 5
# a fresh clone's benchmark test beside it took 189 s against 124 s; the first guest's tests keep their pace, the
# second takes what the first leaves).
EARLY_STATES = {"domain": (domain.DC_STATE, domain.provision_dc)}
_early: list[Future] = []  # the thread's (second guest, started here) once the session's lab is up


def _second_up() -> tuple[Lab, bool]:
    started_here = not lab_running(SECOND)
    second = lab_up(overrides=SECOND)
    second.reset()
    return second, started_here


def _second_early(state: str, build) -> tuple[Lab, bool]:
    """The second guest up and `state` made on it and saved, in a thread. Its commands ride a connection of their own
    (the main thread's restores close the shared ones, which would cut a command short)."""
    started_here = not lab_running(SECOND)
    second = lab_up(overrides=SECOND)
    if second.saved(state):
        return second, started_here  # made earlier (a running lab): the test restores it
    control = Path(second.run) / "cm-early"
    own = dataclasses.replace(second, overrides={**second.overrides, "LAB_CONTROL_PATH": str(control)})
    try:
        own.lab_sh("reset", "clean", timeout=180).check_returncode()  # and its clock set to this machine's
        _nice(second, 10)
        build(own)
        own.lab_sh("save", state, timeout=300).check_returncode()
        _guests[second.run] = state
    except BaseException:
        if started_here:  # the test that asked for it fails with this; nothing is left running
            lab_down(SECOND)
        raise
    finally:
        if lab_running(SECOND):
            _nice(second, 0)
        subprocess.run(["ssh", "-o", f"ControlPath={control}", "-O", "exit", "x"], capture_output=True, check=False)
    return second, started_here


def _nice(lab: Lab, value: int) -> None:
    """Every thread of the guest's QEMU (its vCPUs among them) at this nice value."""
    pid = (Path(lab.run) / "qemu.pid").read_text().strip()
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.setpriority(os.PRIO_PROCESS, int(task.name), value)


@pytest.fixture(scope="session")
def lab(request):
    """The guest for the whole session: reused if it runs (make lab), else started and stopped again. When a test of
    the session starts from one of EARLY_STATES, the second guest is started and that state made in the background."""
    reason = lab_missing_reason()
    require(reason is None, reason or "")
    started_here = not lab_running()
    lab = lab_up()
    lab.reset()  # started: to mark it clean (~3 s); running: it may carry whatever was done to it by hand
    wanted = {name for item in request.session.items for name in getattr(item, "fixturenames", ())}
    early = [EARLY_STATES[name] for name in sorted(wanted & EARLY_STATES.keys())]
    if early:
        _early.append(ThreadPoolExecutor(1, thread_name_prefix="lab-early").submit(_second_early, *early[0]))
    yield lab
    if _early:  # the session ended before a test asked for the second guest: stopped again if started for it
        try:
            _, second_started = _early.pop().result()
        except Exception:  # noqa: BLE001 - its failure is no test's; down it goes
            second_started = True
        if second_started:
            lab_down(SECOND)
    if started_here:
        lab_down()
    else:
        lab.reset()  # left as make lab gave it


@pytest.fixture
def guest(request, lab):
    """The lab, restored before the test to the state it starts from (clean unless a state fixture says otherwise),
    whatever the test before did to it."""
    if not STATE_FIXTURES & set(request.fixturenames):
        lab.enter("clean")
    yield lab
    lab.touched()


@pytest.fixture
def lab_host(db, guest):
    """A Tarn Host for the guest, over the SSH transport with its pinned host key."""
    return guest.add_host()


@pytest.fixture(scope="session")
def lab2(lab):
    """The second guest, for the session (after the first: it restores the saved guest the first one made), started in
    the background when a test of the session starts from one of EARLY_STATES."""
    second, started_here = _early.pop().result() if _early else _second_up()
    yield second
    if started_here:
        lab_down(SECOND)


@pytest.fixture
def guest2(request, lab2):
    """The second guest, restored to its clean state before the test (unless a state fixture restores it)."""
    if not STATE_FIXTURES & set(request.fixturenames):
        lab2.enter("clean")
    yield lab2
    lab2.touched()
