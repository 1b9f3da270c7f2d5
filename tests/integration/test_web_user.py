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


@pytest.fixture
def web(tmp_path):
    require(os.geteuid() == 0, "make run starts the web as root, which then drops to the user tarn")
    data = tmp_path / "data"
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
    db = data / "tarn.sqlite3"
    assert db.stat().st_gid == tarn.pw_gid and db.stat().st_mode & 0o777 == 0o660
    assert (data / "secret_key").stat().st_mode & 0o777 == 0o640
