"""Start a real Celery worker process against the test database and a real Redis."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def worker_env() -> dict:
    db = connection.settings_dict["NAME"]
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "DJANGO_SETTINGS_MODULE": "tarn.settings",
        "REDIS_URL": settings.CELERY_BROKER_URL,
    }


def start_worker(queues: str, log: Path, concurrency: int = 1) -> subprocess.Popen:
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "tarn",
        "worker",
        "-Q",
        queues,
        "-c",
        str(concurrency),
        "--include",
        "tests.support.runners",
        "-n",
        f"test-{os.getpid()}@%h",
        "-l",
        "info",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    return _spawn(argv, log, "ready.", "worker")


def stop_worker(process: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
        process.wait(30)


def start_beat(log: Path) -> subprocess.Popen:
    """Celery beat with the database scheduler (django-celery-beat), against the test database."""
    argv = [sys.executable, "-m", "celery", "-A", "tarn", "beat", "-l", "info", "-s", str(log.with_suffix(".db"))]
    return _spawn(argv, log, "beat: Starting...", "beat")


def _spawn(argv: list[str], log: Path, ready: str, what: str) -> subprocess.Popen:
    """Start a Celery process in its own session, logging to log; return once the log says it is ready."""
    process = subprocess.Popen(
        argv, cwd=ROOT, env=worker_env(), stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ready in log.read_text():
            return process
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    stop_worker(process)
    raise RuntimeError(f"{what} not ready in 60 s: {log.read_text()[-2000:]}")
