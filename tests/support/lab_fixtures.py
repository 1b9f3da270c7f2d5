"""Lab fixtures shared by the lab and browser tiers: one guest for the session, restored before every test."""

import os

import pytest

from tests.conftest import require
from tests.support.lab import ROOT, lab_down, lab_missing_reason, lab_running, lab_up


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
STATE_FIXTURES = {"tank", "shared", "wire"}


@pytest.fixture(scope="session")
def lab():
    """The guest for the whole session: reused if it runs (make lab), else started and stopped again."""
    reason = lab_missing_reason()
    require(reason is None, reason or "")
    started_here = not lab_running()
    lab = lab_up()
    lab.reset()  # started: to mark it clean (~3 s); running: it may carry whatever was done to it by hand
    yield lab
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
    """The second guest, for the session (after the first: it restores the saved guest the first one made)."""
    started_here = not lab_running(SECOND)
    second = lab_up(overrides=SECOND)
    second.reset()
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
