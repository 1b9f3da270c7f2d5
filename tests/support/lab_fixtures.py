"""Lab fixtures shared by the lab and browser tiers: one guest for the session, reset after every test."""

import pytest

from tests.conftest import require
from tests.support.lab import lab_down, lab_missing_reason, lab_running, lab_up


@pytest.fixture(scope="session")
def lab():
    """The guest for the whole session: reused if it runs (make lab), else started and stopped again."""
    reason = lab_missing_reason()
    require(reason is None, reason or "")
    started_here = not lab_running()
    lab = lab_up()
    if not started_here:
        lab.reset()  # a running lab may carry whatever was done to it by hand
    yield lab
    if started_here:
        lab_down()


@pytest.fixture
def guest(lab):
    """The lab, left clean for the next test whatever this one did to it."""
    yield lab
    lab.reset()


@pytest.fixture
def lab_host(db, lab):
    """A Tarn Host for the guest, over the SSH transport with its pinned host key."""
    return lab.add_host()
