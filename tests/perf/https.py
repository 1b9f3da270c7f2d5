"""Issue 41 figures: what the HTTPS front costs. The dashboard's p95 at 50 clients through the front (TLS, nginx)
against plain HTTP straight to the same gunicorn, alternated so the machine's noise falls on both; a new
connection's TLS handshake against a TCP connect; and a scan of what the front accepts: every protocol version
and every cipher suite this machine's OpenSSL knows, offered one at a time."""

import json
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.perf.foundation import ROOT, admin_session_cookie, own_tls_client, tarn_fronted, tarn_served, wrk

# sslyze pins cryptography < 47 (Tarn has 50, through webauthn): it gets a venv of its own, made on first use.
SSLYZE = "sslyze==6.3.1"
SSLYZE_VENV = ROOT / ".venv-sslyze"

# What a scan must find for every accepted TLS 1.2 suite: forward secrecy (ECDHE or DHE key exchange, never static
# RSA or anonymous) and AEAD (GCM, ChaCha20-Poly1305, CCM; never CBC with SHA-1 or SHA-2, RC4, 3DES or NULL).
FORWARD_SECRET = ("ECDHE-ECDSA-", "ECDHE-RSA-", "DHE-RSA-")
AEAD = ("GCM", "CHACHA20", "CCM")


def dashboard_overhead(clients=50, rounds=2, seconds=30):
    cookie = admin_session_cookie()
    # Plain HTTP to a gunicorn of its own, as before the front: behind the front the web's workers share one queue
    # (scripts/web.sh), which straight to clients would leave a thread waiting on each connection wrk opens.
    with tarn_fronted() as front, tarn_served() as plain:
        _is_the_dashboard(f"{plain}/", cookie, {"X-Forwarded-Proto": "https"})
        _is_the_dashboard(f"https://127.0.0.1:{front['https']}/", cookie, {})
        plain_runs, tls = [], []
        for _ in range(rounds):  # alternated: HTTP, HTTPS, HTTP, HTTPS
            as_https = ("X-Forwarded-Proto: https",)  # as the front says it: else each answer is a redirect
            plain_runs.append(
                wrk(f"{plain}/", cookie, clients=clients, pause_ms=1000, seconds=seconds, headers=as_https)
            )
            tls.append(
                wrk(f"https://127.0.0.1:{front['https']}/", cookie, clients=clients, pause_ms=1000, seconds=seconds)
            )
        p_plain, p_tls = statistics.median(r[0] for r in plain_runs), statistics.median(r[0] for r in tls)
        yield "dashboard_p95_50_clients_http", p_plain, "ms", "plain HTTP to gunicorn, as before the front"
        yield "dashboard_p95_50_clients_https", p_tls, "ms", "through the front: TLS 1.3, nginx, the Unix socket"
        yield "https_over_http_p95_ratio", p_tls / p_plain, "x", "goal <= 1.10"
        yield "https_failed_requests", sum(r[2] for r in tls), "count", "goal 0"
        yield from handshake_cost(front["https"])
        yield from tls_scan(front["https"])
        yield from sslyze_scan(front["https"])


def _is_the_dashboard(url: str, cookie: str, headers: dict) -> None:
    """What both runs measure is the signed-in dashboard (not a redirect to HTTPS or to the login page)."""
    request = urllib.request.Request(url, headers={"Cookie": cookie, **headers})
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=own_tls_client()), _NoRedirect())
    with opener.open(request, timeout=30) as response:
        body = response.read().decode()
    assert response.status == 200 and 'action="/logout/"' in body, (url, response.status)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def handshake_cost(port: int, n: int = 200):
    """Full handshakes (no resumption: a new client context each time) against bare TCP connects."""

    def tcp():
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass

    def tls():
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, own_tls_client().wrap_socket(raw):
            pass

    for fn in (tcp, tls):
        fn()
    samples = {"tcp": [], "tls": []}
    for _ in range(n):
        for name, fn in (("tcp", tcp), ("tls", tls)):
            started = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - started) * 1000)
    tcp_ms, tls_ms = statistics.median(samples["tcp"]), statistics.median(samples["tls"])
    yield (
        "tls_handshake_median",
        tls_ms - tcp_ms,
        "ms",
        "a new connection's TLS 1.3 handshake (ECDSA P-256), over TCP's",
    )
    yield "tcp_connect_median", tcp_ms, "ms", "informational"


def _accepted(port: int, **context) -> bool:
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            own_tls_client(**context).wrap_socket(raw),
        ):
            return True
    except (ssl.SSLError, ConnectionResetError):
        return False


def tls_scan(port: int):
    """Every protocol this OpenSSL can speak (SECLEVEL 0: the client offers what it can), then each TLS 1.2 suite
    alone: what the front accepts. Printed, and counted against WEAK."""
    protocols = []
    for version in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1, ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        context = own_tls_client(minimum_version=version, maximum_version=version)
        try:
            context.set_ciphers("ALL:@SECLEVEL=0")
        except ssl.SSLError:
            pass
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            try:
                with context.wrap_socket(raw):
                    protocols.append(version.name)
            except (ssl.SSLError, ConnectionResetError):
                pass
    suites = []
    probe = own_tls_client(maximum_version=ssl.TLSVersion.TLSv1_2)
    probe.set_ciphers("ALL:COMPLEMENTOFALL:@SECLEVEL=0")
    for suite in (c["name"] for c in probe.get_ciphers() if c["protocol"] == "TLSv1.2"):
        context = own_tls_client(maximum_version=ssl.TLSVersion.TLSv1_2)
        try:
            context.set_ciphers(f"{suite}:@SECLEVEL=0")
        except ssl.SSLError:
            continue
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            try:
                with context.wrap_socket(raw):
                    suites.append(suite)
            except (ssl.SSLError, ConnectionResetError):
                pass
    print(f"# protocols accepted: {', '.join(protocols)}")
    print(f"# TLS 1.2 suites accepted: {', '.join(suites)}")
    old = [p for p in protocols if p in ("TLSv1", "TLSv1_1")]
    weak = [s for s in suites if not s.startswith(FORWARD_SECRET) or not any(a in s for a in AEAD)]
    yield "tls_protocols_below_1_2", len(old), "count", "goal 0"
    yield "tls_weak_suites", len(weak), "count", f"goal 0{': ' + ', '.join(weak) if weak else ''}"


CHECKS = [dashboard_overhead]


def _sslyze() -> Path:
    tool = SSLYZE_VENV / "bin" / "sslyze"
    if not tool.exists():
        subprocess.run([sys.executable, "-m", "venv", str(SSLYZE_VENV)], check=True, timeout=120)
        pip = [str(SSLYZE_VENV / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", SSLYZE]
        subprocess.run(pip, check=True, timeout=600)
    return tool


def sslyze_scan(port: int):
    """sslyze (from PyPI) on the front: the protocols it finds accepted, and any accepted suite that is weak."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "sslyze.json"
        subprocess.run(
            [str(_sslyze()), f"--json_out={report}", "--quiet", f"127.0.0.1:{port}"],
            capture_output=True,
            timeout=600,
            check=False,
        )
        result = json.loads(report.read_text())["server_scan_results"][0]["scan_result"]
    accepted = {
        proto: [s["cipher_suite"]["name"] for s in (result[key]["result"] or {}).get("accepted_cipher_suites", [])]
        for proto, key in (
            ("SSLv2", "ssl_2_0_cipher_suites"),
            ("SSLv3", "ssl_3_0_cipher_suites"),
            ("TLSv1.0", "tls_1_0_cipher_suites"),
            ("TLSv1.1", "tls_1_1_cipher_suites"),
            ("TLSv1.2", "tls_1_2_cipher_suites"),
            ("TLSv1.3", "tls_1_3_cipher_suites"),
        )
    }
    print(f"# sslyze: accepted {', '.join(f'{p} ({len(s)} suites)' for p, s in accepted.items() if s)}")
    old = [p for p in ("SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1") if accepted[p]]
    # sslyze names suites as IANA does (TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
    weak = [
        s for s in accepted["TLSv1.2"] if not s.startswith(("TLS_ECDHE_", "TLS_DHE_")) or not any(a in s for a in AEAD)
    ]
    yield "sslyze_protocols_below_1_2", len(old), "count", f"goal 0{': ' + ', '.join(old) if old else ''}"
    yield "sslyze_weak_suites", len(weak), "count", f"goal 0{': ' + ', '.join(weak) if weak else ''}"
