"""The permissions app's tests run its host calls for real on this machine (ACLs on a temporary folder of this
machine's ext4 standing in for a dataset's mount point), through the local host's transport. What only a NAS has
is stood in for: the helper is run from Tarn's source rather than installed under /usr/local/lib/tarn, and the walk's
transient systemd unit (this machine has no systemd) is a thread running the same helper code, stopped as
`systemctl stop` would stop it (SIGTERM's flag)."""

import threading
from pathlib import Path

import pytest
from django.utils import timezone

from appliance.models import Host
from hostlib import acl, acl_helper
from hostlib.runner import CommandResult, LocalTransport
from pools.models import Dataset, Pool
from tests.support.runners import program


class WalkHere(LocalTransport):
    """The local transport, with the walk's unit as a thread and its status file in a temporary folder."""

    walks: dict = {}

    def _execute(self, argv, *, timeout, input, mutating, max_output=None, env=None):
        if argv[0] == "systemd-run":
            unit = next(a for a in argv if a.startswith("--unit=")).split("=", 1)[1]
            command, args, status = argv[-3:]  # … -- python3 -I -S HELPER command args status
            given = acl_helper._read_args(args)
            if command == "project":
                walk = acl_helper.ProjectWalk(given["project"], True, status)
            else:
                walk = acl_helper.Walk(acl_helper.Spec(given["spec"]), command == "apply", status)
            walk.workers = 1  # a thread here: no forked workers (tests/hostlib/test_acl.py runs those for real)
            thread = threading.Thread(target=walk.run, args=(given["root"], given["parts"]), daemon=True)
            WalkHere.walks[unit] = (walk, thread)
            thread.start()
            return CommandResult(argv, 0, "", "", 0.0, mutating)
        if argv[0] == "systemctl":
            unit = argv[-1].rsplit(".", 1)[0]
            walk, thread = WalkHere.walks.get(unit, (None, None))
            if argv[1] == "stop" and walk:
                walk.stop = True
            if argv[1] == "show":
                state = "active" if thread and thread.is_alive() else "inactive"
                return CommandResult(argv, 0, f"ActiveState={state}\nResult=success\n", "", 0.0, mutating)
            return CommandResult(argv, 0, "", "", 0.0, mutating)
        if argv[0] == "install":
            return CommandResult(argv, 0, "", "", 0.0, mutating)
        return super()._execute(argv, timeout=timeout, input=input, mutating=mutating, env=env)

    def _write(self, path, data, mode, timeout, group=""):
        Path(path).write_bytes(data)
        return True

    def _remove(self, path, timeout):
        Path(path).unlink(missing_ok=True)
        return True


@pytest.fixture
def here(monkeypatch, tmp_path):
    """Every transport_for() a local transport with the walk stood in for; the helper from Tarn's source."""
    monkeypatch.setattr(acl, "install_helper", lambda t: False)
    monkeypatch.setattr(acl, "HELPER", program(acl_helper))
    monkeypatch.setattr(acl, "STATUS_DIR", str(tmp_path / "status"))
    (tmp_path / "status").mkdir()
    audited = []

    def transport_for(host, *, user=None, operation=None, read_only=None):
        return WalkHere(read_only=bool(read_only), on_command=audited.append)

    for module in ("appliance.operations", "permissions.services.folders", "permissions.services.acls"):
        monkeypatch.setattr(f"{module}.transport_for", transport_for)
    return audited


@pytest.fixture
def mount(tmp_path):
    """The dataset's mount point: a team folder with a document, a script and a subfolder."""
    root = tmp_path / "tank" / "office"
    (root / "team" / "sub").mkdir(parents=True)
    (root / "team" / "doc.txt").write_text("x")
    (root / "team" / "run.sh").write_text("#!/bin/sh\n")
    (root / "team" / "run.sh").chmod(0o755)
    root.chmod(0o755)
    return root


@pytest.fixture
def dataset(db, mount):
    host = Host.objects.get_or_create(name="local", defaults={"transport": "local", "address": "localhost"})[0]
    now = timezone.now()
    pool = Pool.objects.create(host=host, name="tank", observed_at=now)
    props = {
        "acltype": {"value": "posix", "source": "local"},
        "xattr": {"value": "sa", "source": "local"},
        "mounted": {"value": "yes", "source": "-"},
    }
    return Dataset.objects.create(
        host=host,
        pool=pool,
        name="tank/office",
        type="filesystem",
        mountpoint=str(mount),
        properties=props,
        observed_at=now,
    )
