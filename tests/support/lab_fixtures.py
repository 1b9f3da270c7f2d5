"""Lab fixtures shared by the lab and browser tiers: one guest for the session, restored before every test."""

import pytest

from tests.conftest import require
from tests.support.lab import lab_down, lab_missing_reason, lab_running, lab_up

# The fixtures that start a test from a saved state of their own (Lab.enter): with one of them, `guest` leaves the
# restore to it instead of restoring the clean state first.
STATE_FIXTURES = {"tank", "shared"}


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
