"""Tarn's HTTPS front on this machine: nginx (Debian's) terminates TLS and hands requests to the web (gunicorn, on a
Unix socket only the web's group may use). This module renders its configuration, has nginx check the new file
before it replaces the old one, and reloads it (a graceful reload: old workers finish their requests, gunicorn is
not touched). Why nginx and not gunicorn's own TLS: one process both answers plain HTTP (a redirect, /healthz, later
ACME's challenges) and serves TLS, buffers slow clients in front of gunicorn's few threads, and switches to a new
certificate with `nginx -s reload` without dropping a request; its TLS is the code every distribution maintains."""

import re
from dataclasses import dataclass
from pathlib import Path

from hostlib.configfiles import ConfigRejected
from hostlib.errors import last_line
from hostlib.runner import LocalTransport

# Mozilla's "intermediate" profile (ssl-config.mozilla.org, v5.7) for an ECDSA certificate: TLS 1.2 and 1.3, forward
# secrecy and AEAD only (TLS 1.3's suites are fixed by OpenSSL and all strong). RSA suites stay for an imported RSA
# certificate.
PROTOCOLS = "TLSv1.2 TLSv1.3"
CIPHERS = ":".join(
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
    )
)
HSTS_SECONDS = 31536000  # a year, sent only once the admin said the certificate is trusted
TIMEOUT = 30.0


@dataclass(frozen=True)
class Front:
    """What the front's configuration is made from (paths absolute)."""

    https_port: int
    http_port: int
    cert: str
    key: str
    upstream: str  # the web's Unix socket
    pid_file: str  # in a folder only root writes: `nginx -s reload` signals the pid it names, as root
    temp_dir: str  # request bodies and large answers on their way (the workers write there)
    user: str = ""  # the workers' user when nginx starts as root (the web's: it may use the socket)
    hsts: bool = False
    upload_path: str = "/backups/upload/"  # streamed to the web unbuffered and unlimited: the web sets the limit
    listen: tuple[str, ...] = ("0.0.0.0", "[::]")
    challenges: str = ""  # ACME's HTTP-01 answers, served on the HTTP port (a folder only root writes)


def _redirect_target(f: Front) -> str:
    return "https://$host" + ("" if f.https_port == 443 else f":{f.https_port}") + "$request_uri"


TOKEN = "[A-Za-z0-9_-]{16,128}"  # an ACME HTTP-01 token (Let's Encrypt's are 43 characters)
USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
PATH = re.compile(r"/[A-Za-z0-9_./+-]{0,400}")  # nothing nginx would read as syntax: no space, quote, ; { } $ #


def _checked(f: Front) -> None:
    """Every value that goes into the file, against a strict pattern (they come from settings and root's data dir,
    but a config file is no place to find out)."""
    bad = [n for n in ("cert", "key", "upstream", "pid_file", "temp_dir") if not PATH.fullmatch(getattr(f, n))]
    bad += ["challenges"] if f.challenges and not PATH.fullmatch(f.challenges) else []
    bad += ["user"] if f.user and not USER.fullmatch(f.user) else []
    bad += [n for n in ("https_port", "http_port") if not 0 < getattr(f, n) < 65536]
    bad += ["listen"] if not set(f.listen) <= {"0.0.0.0", "[::]", "127.0.0.1", "[::1]"} else []
    if bad or f.https_port == f.http_port:
        raise ValueError(f"the front's settings cannot go into nginx.conf: {', '.join(bad) or 'one port for both'}")


def render(f: Front) -> str:
    """The whole nginx.conf (nginx started with -c on it, in the foreground)."""
    _checked(f)
    to_web = (
        "proxy_pass http://tarn_web;\n"
        "            proxy_http_version 1.1;\n"
        '            proxy_set_header Connection "";\n'
        "            proxy_set_header Host $http_host;\n"  # with its port, as the browser's Origin names it (CSRF)
        "            proxy_set_header X-Real-IP $remote_addr;\n"
        "            proxy_set_header X-Forwarded-For $remote_addr;\n"
        "            proxy_set_header X-Forwarded-Proto {scheme};\n"
        "            proxy_read_timeout 300s;"
    )
    http_listen = "\n".join(f"        listen {a}:{f.http_port};" for a in f.listen)
    https_listen = "\n".join(f"        listen {a}:{f.https_port} ssl http2;" for a in f.listen)
    hsts = (
        f'        add_header Strict-Transport-Security "max-age={HSTS_SECONDS}; includeSubDomains" always;\n'
        if f.hsts
        else "        # no HSTS: the admin has not said the certificate is trusted yet\n"
    )
    user = f"user {f.user};\n" if f.user else ""
    # A token is base64url (RFC 8555 8.3): only such a name is looked up, as a file in the folder, as plain text.
    challenges = (
        f'        location ~ "^/\\.well-known/acme-challenge/({TOKEN})$" {{\n'
        "            default_type text/plain;\n"
        f"            alias {f.challenges}/$1;\n"
        "        }\n"
        if f.challenges
        else ""
    )
    return f"""# Written by Tarn (manage.py tarn_front) from its settings; edits here are replaced on the next start.
{user}daemon off;
worker_processes auto;
pid {f.pid_file};
error_log stderr warn;

events {{
    worker_connections 1024;
}}

http {{
    server_tokens off;
    access_log off;  # the web logs each request
    client_body_temp_path {f.temp_dir}/body;
    proxy_temp_path {f.temp_dir}/proxy;
    fastcgi_temp_path {f.temp_dir}/fastcgi;
    uwsgi_temp_path {f.temp_dir}/uwsgi;
    scgi_temp_path {f.temp_dir}/scgi;
    client_max_body_size 64m;
    types {{ text/plain txt; }}
    default_type application/octet-stream;

    upstream tarn_web {{
        server unix:{f.upstream};  # a connection a request: the web keeps none, so its workers share one queue
    }}

    # Plain HTTP: a redirect to HTTPS, /healthz for a monitor that cannot do TLS, and ACME's HTTP-01 answers.
    server {{
{http_listen}
{challenges}        location = /healthz {{
            {to_web.format(scheme="http")}
        }}
        location / {{
            return 301 {_redirect_target(f)};
        }}
    }}

    server {{
{https_listen}
        ssl_certificate {f.cert};
        ssl_certificate_key {f.key};
        ssl_protocols {PROTOCOLS};
        ssl_ciphers {CIPHERS};
        ssl_prefer_server_ciphers off;
        ssl_ecdh_curve X25519:prime256v1:secp384r1;
        ssl_session_cache shared:tarn_tls:10m;
        ssl_session_timeout 1d;
        ssl_session_tickets off;
{hsts}
        location = {f.upload_path} {{
            client_max_body_size 0;
            proxy_request_buffering off;
            {to_web.format(scheme="https")}
        }}
        location / {{
            {to_web.format(scheme="https")}
        }}
    }}
}}
"""


def _transport(folder: str) -> LocalTransport:
    return LocalTransport(extra_tools=frozenset({"nginx"}), writable_dirs=(folder,))


def check(conf: str, *, transport: LocalTransport | None = None) -> None:
    """nginx's own test of a configuration file (syntax, the certificate and key readable and matching):
    ConfigRejected with its words if it fails."""
    t = transport or _transport(str(Path(conf).parent))
    result = t.run(["nginx", "-t", "-q", "-c", conf], check=False, timeout=TIMEOUT)
    if result.returncode != 0:
        problems = [line.strip() for line in result.stderr.splitlines() if "[emerg]" in line or "[crit]" in line]
        raise ConfigRejected("nginx", problems or [last_line(result.stderr) or f"exit status {result.returncode}"])


def install(conf: str, text: str, *, reload: bool = True) -> bool:
    """Write conf with text if it differs, once nginx accepted text as a new file beside it; then, with reload and
    nginx running, reload it. A text nginx refuses leaves the old file (and the running front) as they were.
    True if the file changed."""
    path = Path(conf)
    t = _transport(str(path.parent))
    old = path.read_text() if path.exists() else None
    if old == text:
        return False
    candidate = str(path.with_name(f"{path.name}.candidate"))
    t.write_file(candidate, text, mode=0o640)
    try:
        check(candidate, transport=t)
    finally:
        t.remove_file(candidate)
    t.write_file(conf, text, mode=0o640)
    if reload:
        reload_running(conf)
    return True


def reload_running(conf: str) -> bool:
    """`nginx -s reload` for the front started on conf, if it runs (True then): its old workers finish their
    requests, new ones take the new configuration."""
    if not running(conf):
        return False
    _transport(str(Path(conf).parent)).run(["nginx", "-s", "reload", "-c", conf], mutating=True, timeout=TIMEOUT)
    return True


def _pid(conf: str) -> int | None:
    for line in Path(conf).read_text().splitlines():
        if line.startswith("pid "):
            try:
                return int(Path(line[4:].rstrip(";").strip()).read_text().strip())
            except (OSError, ValueError):
                return None
    return None


def running(conf: str) -> bool:
    """Is the nginx started on conf running (its pid file names a live process)?"""
    pid = _pid(conf)
    if pid is None:
        return False
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"nginx")
    except OSError:
        return False
