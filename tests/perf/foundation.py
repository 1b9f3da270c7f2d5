"""Issue 2 figures: local and SSH run(["true"]) round trips; dashboard p95 under 50 concurrent clients."""

import contextlib
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarn.settings")


def _median_ms(fn, n=50) -> float:
    fn()  # warm up (and open the shared SSH connection)
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def runner_round_trips():
    from hostlib.runner import LocalTransport, SSHTransport
    from tests.support.sshd import start_sshd

    local = LocalTransport()
    yield "local_run_true_median", _median_ms(lambda: local.run(["true"])), "ms", "informational"
    with tempfile.TemporaryDirectory() as tmp:
        sshd = start_sshd(Path(tmp) / "sshd", "/usr/sbin/sshd")
        try:
            ssh = SSHTransport(
                address="127.0.0.1",
                port=sshd.port,
                identity_file=str(sshd.client_key),
                host_keys=[sshd.host_pub],
                state_dir=tmp,
            )
            yield "ssh_run_true_median", _median_ms(lambda: ssh.run(["true"])), "ms", "informational; loopback sshd"
            ssh.close()
        finally:
            sshd.stop()


def admin_session_cookie(host_id: int | None = None) -> str:
    """Migrate the perf database, make an admin and a logged-in session; the Cookie header for it."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command

    from appliance.models import User

    call_command("migrate", verbosity=0)
    user = User.objects.filter(username="perf").first() or User.objects.create_user(
        "perf", password="perf-password-1", role="admin"
    )
    session = SessionStore()
    session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(user.pk), "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    if host_id is not None:
        session["host_id"] = host_id  # the host switcher's choice
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


SERVED: list[int] = []  # the pid of each gunicorn tarn_served runs now (its master: its workers are its children)


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds so far of a process and every descendant living, read from /proc: what a page
    costs the web, a figure the machine's neighbours disturb less than a latency."""
    ticks, todo = 0, [pid]
    while todo:
        process = todo.pop()
        try:
            fields = Path(f"/proc/{process}/stat").read_text().rpartition(")")[2].split()
            ticks += int(fields[11]) + int(fields[12])  # utime and stime, the stat's 14th and 15th
            for task in Path(f"/proc/{process}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended meanwhile
    return ticks / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def tarn_served():
    """gunicorn serving Tarn on a free port, as `make run` does; yields the base URL."""
    from django.conf import settings

    from tests.support.sshd import free_port

    port = free_port()
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "tarn.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "--workers",
            os.environ.get("TARN_WEB_WORKERS", "4"),
            "--threads",
            os.environ.get("TARN_WEB_THREADS", "2"),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, "TARN_DATA_DIR": str(settings.DATA_DIR)},
    )
    SERVED.append(web.pid)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        SERVED.remove(web.pid)
        web.terminate()
        web.wait(10)


@contextlib.contextmanager
def tarn_fronted():
    """Tarn as `make run` serves it (as root, with nginx): gunicorn as the user tarn behind the HTTPS front, on the perf
    data dir and database, its output in the data dir's web.log; yields running_front's dict with "base", the HTTPS
    base URL, the web's pid in SERVED as tarn_served's. Behind the front the web's workers share one queue
    (scripts/web.sh), which straight to clients they do not."""
    from django.conf import settings

    from tests.support.front import running_front

    database = {"DATABASE_URL": os.environ["DATABASE_URL"]} if os.environ.get("DATABASE_URL") else {}
    workers = os.environ.get("TARN_WEB_WORKERS", "4")  # make run's (running_front's own is 2, for the tests)
    with (
        open(settings.DATA_DIR / "web.log", "ab") as log,  # its access log: a line a request, 40,000 a page run
        running_front(settings.DATA_DIR, web_log=log, TARN_WEB_WORKERS=workers, **database) as front,
    ):
        SERVED.append(front["web"].pid)
        try:
            yield {**front, "base": f"https://127.0.0.1:{front['https']}"}
        finally:
            SERVED.remove(front["web"].pid)


def own_tls_client(**versions) -> ssl.SSLContext:
    """A TLS client for this machine's own front, whose certificate its first start made (not one to verify), with
    the SSLContext attributes given (minimum_version=...)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    for attribute, value in versions.items():
        setattr(context, attribute, value)
    return context


WRK_THREADS = 2


def wrk(
    url: str,
    cookie: str,
    *,
    clients: int,
    pause_ms: int,
    seconds: int,
    headers: tuple[str, ...] = (),
    together: bool = True,
) -> tuple[float, float, float]:
    """wrk (C) as the load, so the 2 cores serve Tarn, not the load generator: (p95 ms, req/s, errors).

    together: every client's first request at once, as straight to gunicorn it must go (p95.lua says why); False,
    through the front, where a connection waits in nginx until its request comes: each client's first request after
    a pause as the others, so the crowd arrives spread as it goes on, not as one burst of `clients` requests."""
    out = subprocess.run(
        [
            "wrk",
            f"-t{WRK_THREADS}",
            f"-c{clients}",
            f"-d{seconds}s",
            *(arg for header in headers for arg in ("-H", header)),
            "-H",
            f"Cookie: {cookie}",
            "-s",
            str(ROOT / "tests/perf/p95.lua"),
            url,
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=True,
        # together: each connection's first request at once (p95.lua says why); wrk gives each thread clients / threads
        env={
            **os.environ,
            "TARN_WRK_DELAY_MS": str(pause_ms),
            "TARN_WRK_FIRST": str(clients // WRK_THREADS if together else 0),
        },
    ).stdout
    _, p95, count, errors, duration_us = next(x for x in out.splitlines() if x.startswith("TARN ")).split()
    return float(p95), int(count) / (int(duration_us) / 1e6), float(errors)


def warm(url: str, cookie: str, times: int = 20) -> None:
    """A few requests first, so gunicorn's workers have loaded, compiled and cached what the page needs: the first
    path measured after a start was 1.5x the same path measured later."""
    import urllib.request

    for _ in range(times):
        request = urllib.request.Request(url, headers={"Cookie": cookie})
        urllib.request.urlopen(request, timeout=30, context=own_tls_client()).read()  # noqa: S310 - this machine's


def dashboard_p95(clients=50):
    cookie = admin_session_cookie()
    from appliance.models import Host, Operation

    host = Host.objects.get(name="local")
    Operation.objects.bulk_create(
        [
            Operation(kind="appliance.host_probe", target=f"perf:{i}", host=host, status="succeeded", message="ok")
            for i in range(500)
        ]
    )
    with tarn_served() as base:
        # 50 people with the dashboard open, each reloading it about once a second. All 50 first requests
        # start together (a burst no real crowd makes); 40 s keeps that start below the 95th percentile.
        p95, rate, errors = wrk(f"{base}/", cookie, clients=clients, pause_ms=1000, seconds=40)
        yield "dashboard_p95_50_clients", p95, "ms", "goal <= 100 ms; each client reloads every 0.5-1.5 s"
        yield "dashboard_failed_requests", errors, "count", "goal 0"
        # The same 50 connections with no pause at all: what 2 cores can serve.
        p95, rate, errors = wrk(f"{base}/", cookie, clients=clients, pause_ms=0, seconds=15)
        yield "dashboard_p95_50_saturating", p95, "ms", "informational; back-to-back requests"
        yield "dashboard_max_throughput", rate, "req/s", "informational"


CHECKS = [runner_round_trips, dashboard_p95]


def lab_host(what: str):
    """The lab guest, reset, and its Host row in the migrated perf database; None (said why) without a lab."""
    from tests.support.lab import lab_missing_reason, lab_up

    reason = lab_missing_reason()
    if reason:
        print(f"# {what} figures skipped: {reason}")
        return None
    lab = lab_up()
    lab.reset()
    admin_session_cookie()  # migrates the perf database
    from django.core.management import call_command

    from appliance.models import Host

    call_command("tarn_lab_host", "/run/tarn-lab/lab.env", verbosity=0)
    return lab, Host.objects.get(name="lab")


def run_operations_inline() -> None:
    """Operations queued from here run at once in this process through the runner registry (no worker, no broker)."""
    from tarn.celery import app
    from tests.support.inline import run_when_queued

    app.send_task = run_when_queued
