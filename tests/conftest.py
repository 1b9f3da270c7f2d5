"""The fixed cast (admin, operator, viewer, anonymous) and the rule that CI never skips a tier."""

import functools
import os
import shutil

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.hashers import make_password
from django.core.cache import cache

from appliance.choices import Role
from appliance.models import Host, User
from tarn.celery import app
from tests.support import runners  # noqa: F401 - the kinds only tests declare
from tests.support.fresh import signed_in
from tests.support.inline import run_when_queued
from tests.support.sshd import start_sshd

IN_CI = os.environ.get("CI", "").lower() == "true"


def require(condition: bool, reason: str) -> None:
    """Skip outside CI when something this test needs is missing; under CI=true that is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def require_tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)
    require(path is not None, f"{name} is not installed")
    return path


# Lab lanes: `make test` runs the lab tier as two pytest runs side by side, each on guests of its own (lane 1: lab.sh's
# defaults and lab/second.env; lane 2: lab/lane2.env and lab/lane2-second.env), since one emulated guest leaves the
# machine's second core idle much of the time. A module marked lane(1) runs in the first (it needs this machine's data
# link to the guest, or evens the two out); every other lab test in the second. Without TARN_LAB_LANE one run takes
# them all.
LANE = os.environ.get("TARN_LAB_LANE", "")


def lab_lane(item) -> str:
    marker = item.get_closest_marker("lane")
    return str(marker.args[0]) if marker else "2"


def pytest_collection_modifyitems(config, items):
    if not LANE:
        return
    lab = [item for item in items if "lab" in item.keywords]
    wired = [item.nodeid for item in lab if lab_lane(item) != "1" and "local_host" in getattr(item, "fixturenames", ())]
    if wired:  # only lane 1's guest is wired to this machine
        raise pytest.UsageError(f"lab tests that use this machine's own host must be marked lane(1): {wired}")
    other = [item for item in lab if lab_lane(item) != LANE]
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = [item for item in items if item not in other]


PASSWORD = "correct-horse-battery"


@functools.cache
def _password_hash() -> str:
    """Django's real hasher, once per session: hashing costs ~1.3 s here, and most tests make two or three users."""
    return make_password(PASSWORD)


def _user(username, role):
    user = User(username=username, role=role, password=_password_hash())
    user.save()
    return user


@pytest.fixture
def admin_user(db):
    return _user("alice", Role.ADMIN)


@pytest.fixture
def operator_user(db):
    return _user("oscar", Role.OPERATOR)


@pytest.fixture
def kept(settings):
    """What appliance.kept keeps is kept a minute in this test (every other test reads afresh, below)."""
    settings.TARN_DASHBOARD_SECONDS = 60
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True, scope="session")
def _dashboard_read_afresh():
    """A test sees the home page as its data is now (tests/appliance/test_dashboard_kept.py tests the keeping, each
    test through pytest-django's `settings`, which puts this 0 back). Once for the session: a per-test override costs
    every test a settings signal round."""
    django_settings.TARN_DASHBOARD_SECONDS = 0


@pytest.fixture
def viewer_user(db):
    return _user("vera", Role.VIEWER)


def _client_for(user):
    """Signed in just now, as the login page does (tests.support.fresh: a test of a refusal makes it stale)."""
    return signed_in(user)


@pytest.fixture
def admin_client(admin_user):
    return _client_for(admin_user)


@pytest.fixture
def operator_client(operator_user):
    return _client_for(operator_user)


@pytest.fixture
def viewer_client(viewer_user):
    return _client_for(viewer_user)


@pytest.fixture
def run_queued(monkeypatch, django_capture_on_commit_callbacks):
    """Start an operation as a page would and run it here when it is queued: the real queueing path (the
    message's kwargs, a split secret included) into the runner registry, with no worker. Returns what start
    returned: the row, refreshed, or a page's response."""
    monkeypatch.setattr(app, "send_task", run_when_queued)

    def run(start, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            result = start(**kwargs)
        if hasattr(result, "refresh_from_db"):
            result.refresh_from_db()
        return result

    return run


@pytest.fixture
def local_host(db):

    # get_or_create: transactional tests flush the row the migration made.
    return Host.objects.get_or_create(name="local", defaults={"transport": "local", "address": "localhost"})[0]


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """A real sshd on 127.0.0.1 that accepts root with its own client key."""

    require_tool("ssh")
    server = start_sshd(tmp_path_factory.mktemp("sshd"), require_tool("sshd"))
    yield server
    server.stop()
