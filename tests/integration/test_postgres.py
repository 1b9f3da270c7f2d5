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
from tests.support import runners  # the test kinds
host = Host.objects.get(name="local")
app.send_task = lambda *args, **kwargs: None  # no broker needed: the constraint is what is tested
operation_start(kind="test.x", subject="tank", host=host, user=None)
try:
    operation_start(kind="test.y", subject="tank", host=host, user=None)
except TargetBusy:
    print("busy-refused")
entry = AuditEntry.objects.create(kind="request", method="POST", path="/x")
try:
    AuditEntry.objects.all().delete()
except PermissionError:
    print("audit-kept", AuditEntry.objects.count())
"""

# The inventory's in-place update (INSERT … ON CONFLICT on the natural keys) on PostgreSQL, with the lab's
# captured `zfs list` output: rows keep their ids when values change, and what is gone is deleted.
INVENTORY = """
import django; django.setup()
from pathlib import Path
from django.db import transaction
from django.utils import timezone
from hostlib import zfs
from appliance.models import Host
from pools.models import Dataset, Pool, Snapshot
from pools.services.inventory import _save_datasets
host = Host.objects.get(name="local")
now = timezone.now()
pool = Pool.objects.create(host=host, name="tank", guid="1", state="ONLINE", observed_at=now)
import json
listing = json.loads(Path("tests/fixtures/host/zfs_list.json").read_text())
infos = [i for i in zfs.parse_list(json.dumps(listing)) if i.type in ("filesystem", "volume")]
def listed(kept):
    names = {i.name for i in kept}
    return json.dumps({**listing, "datasets": {k: v for k, v in listing["datasets"].items() if k in names}})
def snaps(used):
    return "".join(f"{i.name}@s{n}\\t{used}\\t{n}\\t1700000000\\t0\\n" for i in infos for n in range(3))
def save(text, datasets=infos):
    with transaction.atomic():
        _save_datasets(host, pool, "tank", None, listed(datasets), text, now)
def ids():
    return sorted(Dataset.objects.values_list("id", flat=True)), sorted(Snapshot.objects.values_list("id", flat=True))
save(snaps(1)); first = ids()
save(snaps(2)); second = ids()
print("kept" if first == second else "moved", Snapshot.objects.filter(used=2).count() == Snapshot.objects.count())
save(snaps(2), [i for i in infos if i.name != "tank/vol"])
print(Dataset.objects.filter(name="tank/vol").exists(), len(infos) - 1 == Dataset.objects.count())
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
        "DJANGO_SETTINGS_MODULE": "tarn.settings",
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


def test_the_inventory_updates_rows_in_place_on_postgresql(postgres, tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": postgres,
        "TARN_DATA_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "tarn.settings",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    run = subprocess.run(
        [sys.executable, "-c", INVENTORY], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["kept", "True", "False", "True"]
