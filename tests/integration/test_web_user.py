"""The web server runs unprivileged: scripts/web.sh (what make run starts) on a throw-away data dir, as root."""

import http.cookiejar
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import require
from tests.support.receivers import smtp  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _uids(pid: int) -> set[int]:
    """Real, effective, saved and filesystem uids of pid and of its children."""
    pids = [pid] + [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    uids = set()
    for p in pids:
        line = next(ln for ln in Path(f"/proc/{p}/status").read_text().splitlines() if ln.startswith("Uid:"))
        uids |= {int(u) for u in line.split()[1:]}
    return uids


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """One web start for the module's tests (~20 s of migrate, prepare and gunicorn's start each)."""
    require(os.geteuid() == 0, "make run starts the web as root, which then drops to the user tarn")
    data = tmp_path_factory.mktemp("web") / "data"
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        "TARN_DATA_DIR": str(data),
        "DJANGO_SETTINGS_MODULE": "tarn.settings",
        "TARN_ADMIN_PASSWORD": "correct horse battery",
        "TARN_BIND": f"127.0.0.1:{port}",
        "TARN_WEB_WORKERS": "2",
    }
    for argv in (["migrate", "--noinput", "-v0"], ["tarn_admin"], ["tarn_identity"]):
        subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, check=True, timeout=120)
    subprocess.run(["scripts/web.sh", "prepare"], cwd=ROOT, env=env, check=True, timeout=120)
    process = subprocess.Popen(["scripts/web.sh", "serve"], cwd=ROOT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=2)
            break
        except OSError:
            assert process.poll() is None, "the web server exited"
            assert time.monotonic() < deadline, "the web server did not answer in 60 s"
            time.sleep(0.3)
    yield base, process, data
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


def test_the_web_runs_as_tarn_logs_in_and_cannot_read_the_private_key(web):
    base, process, data = web
    tarn = pwd.getpwnam("tarn")
    assert _uids(process.pid) == {tarn.pw_uid}, "gunicorn and its workers run as tarn only"

    # It reads and writes the database (a login writes the session and clears the attempt counter) and shows the
    # public key from the file the root start made.
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    page = opener.open(f"{base}/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = {"csrfmiddlewaretoken": token, "username": "admin", "password": "correct horse battery"}
    response = opener.open(
        urllib.request.Request(f"{base}/login/", data=urllib.parse.urlencode(form).encode(), headers={"Referer": base})
    )
    assert response.url == f"{base}/", "logged in and sent to the dashboard"
    public = (data / "ssh" / "id_ed25519.pub").read_text().strip()
    assert public.startswith("ssh-ed25519 ") and public in opener.open(f"{base}/hosts/add/").read().decode()

    # The private key and the secret's other readers: tarn reads nothing it must not.
    key = data / "ssh" / "id_ed25519"
    as_tarn = ["setpriv", "--reuid=tarn", "--regid=tarn", "--init-groups", "--"]
    refused = subprocess.run([*as_tarn, "cat", str(key)], capture_output=True, text=True, timeout=10)
    assert refused.returncode != 0 and "Permission denied" in refused.stderr
    assert key.stat().st_mode & 0o777 == 0o600 and key.stat().st_uid == 0
    db = data / "db" / "tarn.sqlite3"
    assert db.stat().st_gid == tarn.pw_gid and db.stat().st_mode & 0o777 == 0o660
    assert (data / "secret_key").stat().st_mode & 0o777 == 0o640
    # The vault: tarn seals with the public half (an escrowed key), only root opens what is sealed.
    sealed = subprocess.run(
        [
            *as_tarn,
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from appliance.vault import seal; print(len(seal('k')))",
        ],
        cwd=ROOT,
        env={**os.environ, "TARN_DATA_DIR": str(data), "DJANGO_SETTINGS_MODULE": "tarn.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sealed.returncode == 0 and int(sealed.stdout.split()[-1]) > 100, sealed.stderr
    identity = data / "vault" / "identity.age"
    refused = subprocess.run([*as_tarn, "cat", str(identity)], capture_output=True, text=True, timeout=10)
    assert refused.returncode != 0 and identity.stat().st_mode & 0o777 == 0o600 and identity.stat().st_uid == 0


def test_the_web_user_writes_its_database_but_cannot_swap_a_key_folder_or_a_backup(web):
    """Issue 39, finding 8: the data dir was 2770 root:tarn, so the web's user could rename vault/ (or ssh/, or a
    backup) and put its own in its place for the root workers to use. Now only db/ and uploads/ are its own."""
    _, _, data = web
    as_tarn = ["setpriv", "--reuid=tarn", "--regid=tarn", "--init-groups", "--"]

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([*as_tarn, *argv], capture_output=True, text=True, timeout=10)

    (data / "backups").mkdir(mode=0o750, exist_ok=True)  # what the first backup makes (as root, the workers' umask)
    made = data / "backups" / "tarn-20250101-000000-abcdef.tarnbackup"
    made.write_bytes(b"TARN-BACKUP 1\n")
    made.chmod(0o640)
    attempts = [
        ("mv", str(data / "vault"), str(data / "vault.old")),
        ("mv", str(data / "ssh"), str(data / "ssh.old")),
        ("mv", str(data / "backups"), str(data / "backups.old")),
        ("mkdir", str(data / "vault2")),
        ("ln", "-s", "/tmp", str(data / "planted")),
        ("mv", str(data / "vault" / "recipient.txt"), str(data / "vault" / "old.txt")),
        ("cp", "/etc/hostname", str(data / "vault" / "recipient.txt")),
        ("rm", "-f", str(made)),
        ("cp", "/etc/hostname", str(data / "backups" / "tarn-20250101-000001-abcdef.tarnbackup")),
    ]
    for argv in attempts:
        tried = run(*argv)
        assert tried.returncode != 0 and "Permission denied" in tried.stderr, (argv, tried.stdout, tried.stderr)
    assert sorted(p.name for p in data.iterdir() if p.name.startswith(("vault", "ssh", "backups"))) == [
        "backups",
        "ssh",
        "vault",
    ]
    assert made.exists()
    # What it may write: the database's folder (SQLite makes its -wal and -shm there) and uploads/.
    assert run("touch", str(data / "db" / "probe")).returncode == 0
    assert run("touch", str(data / "uploads" / "probe")).returncode == 0
    # And it reads what it must: a backup made here (to download it) and the public halves.
    assert run("cat", str(made)).returncode == 0
    assert run("cat", str(data / "vault" / "recipient.txt")).returncode == 0
    for key in (data / "vault", data / "ssh", data):
        st = key.stat()
        assert st.st_uid == 0 and not st.st_mode & 0o022, key


def test_alerts_are_delivered_by_an_unprivileged_worker_that_cannot_read_the_ssh_key(web, smtp):  # noqa: F811
    """make run's deliver worker (scripts/web.sh deliver) runs as tarn: it sends the e-mail of an alert queued on
    the deliver queue, and the process doing so holds no root uid (so no address an admin typed is reached by a
    process that could read Tarn's private key)."""
    base, _, data = web
    controller, inbox = smtp
    env = {**os.environ, "TARN_DATA_DIR": str(data), "DJANGO_SETTINGS_MODULE": "tarn.settings"}
    env.pop("DATABASE_URL", None)
    made = (
        "from analytics.models import Alert, Channel; from appliance.models import Host; "
        f"c = Channel.objects.create(name='mail', kind='email', smtp_host='127.0.0.1', smtp_port={controller.port}, "
        "smtp_security='none', sender='tarn@example.org', recipients='ops@example.org'); "
        "a = Alert.objects.create(host=Host.objects.get(name='local'), rule='pool_state', subject='tank', "
        "level='critical', message='tank is DEGRADED'); print(a.pk, c.pk)"
    )
    ids = (
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", made],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.splitlines()[-1]
        .split()
    )  # the shell may first say what it imported
    worker = subprocess.Popen(["scripts/web.sh", "deliver"], cwd=ROOT, env=env, start_new_session=True)
    try:
        queue = f"from analytics.services import _queue_delivery; _queue_delivery({ids[0]}, {ids[1]}, 'raised')"
        subprocess.run([sys.executable, "manage.py", "shell", "-c", queue], cwd=ROOT, env=env, check=True)
        deadline = time.monotonic() + 60
        while not inbox.messages:
            assert worker.poll() is None, "the deliver worker exited"
            assert time.monotonic() < deadline, "no e-mail within 60 s"
            time.sleep(0.3)
        assert "tank is DEGRADED" in inbox.messages[0][1].get_payload()
        assert _uids(worker.pid) == {pwd.getpwnam("tarn").pw_uid}, "the worker and its children run as tarn only"
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)
