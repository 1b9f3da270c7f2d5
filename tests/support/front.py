"""Tarn behind its HTTPS front, started as scripts/run.sh does, as root on a throw-away data dir: the certificate
made at the first start, nginx (its workers as `tarn`) in front of the unprivileged web on its Unix socket. No
Celery workers: the front and the web are under test. For the integration and browser tiers."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"  # the first admin's


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(env, *argv) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def running_front(data: Path, web_log=None, **extra_env):
    """Yields {"data", "env", "https", "http", "said" (tarn_front's words), "web" (gunicorn's Popen), "first" (the
    first start's certificate PEM)}; stops both at the end. web_log: a file for the web's output (its access log),
    else this process's."""
    require(os.geteuid() == 0, "the front starts as root (ports, the key), the web drops to the user tarn")
    require(shutil.which("nginx") is not None, "nginx is missing (scripts/setup.sh installs it)")
    https_port, http_port = free_port(), free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TARN_BIND")},
        "TARN_DATA_DIR": str(data),
        "DJANGO_SETTINGS_MODULE": "tarn.settings",
        "TARN_ADMIN_PASSWORD": PASSWORD,
        "TARN_HTTPS": "true",
        "TARN_FRONT": "true",
        "TARN_HTTPS_PORT": str(https_port),
        "TARN_HTTP_PORT": str(http_port),
        "TARN_WEB_WORKERS": "2",
        **extra_env,
    }
    manage(env, "tarn_layout")
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "tarn_admin")
    subprocess.run(["scripts/web.sh", "prepare"], cwd=ROOT, env=env, check=True, timeout=120, capture_output=True)
    said = manage(env, "tarn_front", "--user", "tarn-front")  # after prepare, as make run: it makes the user
    env.setdefault("TARN_BIND", f"unix:{data}/sock/web.sock")
    web = subprocess.Popen(
        ["scripts/web.sh", "serve"], cwd=ROOT, env=env, start_new_session=True, stdout=web_log, stderr=web_log
    )
    nginx = subprocess.Popen(["nginx", "-c", str(data / "tls" / "nginx.conf")], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{http_port}/healthz", timeout=5).status == 200:
                    break
            except OSError:
                pass
            assert web.poll() is None and nginx.poll() is None, "the web or the front exited"
            assert time.monotonic() < deadline, "no answer on /healthz in 60 s"
            time.sleep(0.3)
        first = (data / "tls" / "cert.pem").read_bytes()
        yield {
            "data": data,
            "env": env,
            "https": https_port,
            "http": http_port,
            "said": said,
            "web": web,
            "first": first,
        }
    finally:
        for process in (nginx, web):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def settles(probe, expected, what: str, seconds: float = 20) -> None:
    """probe() gives expected five times in a row: after a reload nginx's old workers finish what they hold and stop
    taking connections, so for a moment either may answer."""
    deadline, row = time.monotonic() + seconds, 0
    while row < 5:
        row = row + 1 if probe() == expected else 0
        assert time.monotonic() < deadline, what
        time.sleep(0.05 if row else 0.2)
