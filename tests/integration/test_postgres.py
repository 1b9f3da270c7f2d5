"""DATABASE_URL: Tarn migrates and keeps its rules on a real PostgreSQL (a throw-away cluster)."""

import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import require
from tests.support.sshd import free_port

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import django; django.setup()
from appliance.models import AuditEntry, Host, Operation
from appliance.operations import TargetBusy, app, operation_start
host = Host.objects.get(name="local")
app.send_task = lambda *args, **kwargs: None  # no broker needed: the constraint is what is tested
operation_start(kind="x", target="pool:tank", host=host, user=None)
try:
    operation_start(kind="y", target="pool:tank", host=host, user=None)
except TargetBusy:
    print("busy-refused")
entry = AuditEntry.objects.create(kind="request", method="POST", path="/x")
try:
    AuditEntry.objects.all().delete()
except PermissionError:
    print("audit-kept", AuditEntry.objects.count())
"""


@pytest.fixture(scope="module")
def postgres():
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    require(bool(bins), "PostgreSQL is not installed (apt-get install postgresql)")
    bindir = Path(bins[-1]).parent
    user = pwd.getpwnam("postgres")
    base = Path(tempfile.mkdtemp(prefix="tarn-pg-"))
    os.chown(base, user.pw_uid, user.pw_gid)
    port = free_port()

    def as_postgres(*argv):
        subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True, timeout=120)

    as_postgres(str(bindir / "initdb"), "-D", str(base / "data"), "-A", "trust", "-U", "postgres")
    as_postgres(
        str(bindir / "pg_ctl"),
        "-D",
        str(base / "data"),
        "-l",
        str(base / "log"),
        "-w",
        "-o",
        f"-p {port} -k {base} -c listen_addresses=''",
        "start",
    )
    as_postgres(str(bindir / "createdb"), "-h", str(base), "-p", str(port), "tarn")
    yield f"postgres://postgres@/tarn?host={base}&port={port}"
    as_postgres(str(bindir / "pg_ctl"), "-D", str(base / "data"), "-m", "immediate", "stop")
    shutil.rmtree(base, ignore_errors=True)


def test_tarn_migrates_and_keeps_its_rules_on_postgresql(postgres, tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": postgres,
        "TARN_DATA_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "appliance.settings",
    }
    started = time.monotonic()
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert migrate.returncode == 0, migrate.stderr
    check = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.split() == ["busy-refused", "audit-kept", "1"]
    assert time.monotonic() - started < 240
