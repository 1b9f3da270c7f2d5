"""Delivery: an e-mail through the channel's SMTP server (Django's SMTP backend, TLS as chosen, a timeout) and a
webhook (a JSON POST signed with HMAC-SHA256 of a timestamp and the body, to the addresses its host resolved to
once, no redirects followed, retried, a deadline on each attempt). Each returns (ok, what happened); nothing here
raises, so a broken channel never stops another."""

import hashlib
import hmac
import ipaddress
import json
import re
import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from urllib.parse import quote, urljoin, urlsplit

from django.core.mail import EmailMessage, get_connection

from analytics.choices import RULE, SMTP_TIMEOUT, WEBHOOK_ATTEMPTS, WEBHOOK_TIMEOUT, Level, SmtpSecurity
from analytics.models import Channel
from appliance.audit.redact import redact_url

MAX_HEAD = 16 * 1024  # an answer's status line and headers; its body is never read
URL_SAFE = "/%:@!$&'()*+,;=-._~?"  # what stays as typed in a request target (the rest is percent-encoded)


def payload(event: str, alert) -> dict:
    return {
        "event": event,
        "rule": alert.rule,
        "title": alert.title,
        "level": alert.level,
        "message": alert.message,
        "host": alert.host.name if alert.host else None,
        "subject": alert.subject,
        "raised_at": alert.raised_at.isoformat() if alert.raised_at else None,
        "cleared_at": alert.cleared_at.isoformat() if alert.cleared_at else None,
    }


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """X-Tarn-Signature: HMAC-SHA256 over the timestamp, a dot and the body, so a receiver that refuses old
    timestamps cannot be fed a replay."""
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def send(channel: Channel, data: dict) -> tuple[bool, str]:
    try:
        return (send_email if channel.kind == "email" else send_webhook)(channel, data)
    except Exception as exc:  # noqa: BLE001 (any failure of a channel is its result, never another's problem)
        return False, f"{type(exc).__name__}: {str(exc)[:300]}"


def email_subject(data: dict) -> str:
    """A fixed subject from Tarn's own words: "[Tarn] <level or cleared>: <rule title> on <host name in Tarn>".
    What a NAS reported (a pool's name, a message, an error) goes in the body only, never in a header."""
    what = data["event"] if data["event"] in ("cleared", "test") else data["level"]
    what = what if what in ("cleared", "test", *Level.values) else "alert"
    rule = RULE.get(data["rule"])
    title = rule.title if rule else "Test" if data["event"] == "test" else "Alert"
    host = "".join(c for c in (data.get("host") or "") if c.isalnum() or c in "-_.")[:40]
    return f"[Tarn] {what}: {title}" + (f" on {host}" if host else "")


def send_email(channel: Channel, data: dict) -> tuple[bool, str]:
    connection = get_connection(
        "django.core.mail.backends.smtp.EmailBackend",
        host=channel.smtp_host,
        port=channel.smtp_port,
        username=channel.smtp_username or None,
        password=channel.smtp_password or None,
        use_tls=channel.smtp_security == SmtpSecurity.STARTTLS,
        use_ssl=channel.smtp_security == SmtpSecurity.TLS,
        timeout=SMTP_TIMEOUT,
        fail_silently=False,
    )
    subject = email_subject(data)
    body = "\n".join(f"{k}: {v}" for k, v in data.items() if v is not None)
    recipients = [r.strip() for r in channel.recipients.split(",") if r.strip()]
    EmailMessage(subject, body, channel.sender, recipients, connection=connection).send()
    return True, f"sent to {len(recipients)} recipient{'s' * (len(recipients) != 1)}"


class Refused(Exception):
    """A webhook target Tarn will not post to (trying again will not help)."""


def address_refusal(address: str, allow_private: bool) -> str | None:
    """Why Tarn will not post to this IP address (None: it may). Without allow_private only global addresses;
    never an unspecified or multicast one."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address} is not an IP address"
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.is_unspecified or ip.is_multicast:
        return f"{ip} is an unspecified or multicast address"
    if allow_private or ip.is_global:
        return None
    what = "loopback" if ip.is_loopback else "link-local" if ip.is_link_local else "private or reserved"
    return f"{ip} is a {what} address; tick “Allow private addresses” on the channel to post to it"


def _resolve(host: str, port: int, allow_private: bool, timeout: float) -> list[tuple[int, tuple]]:
    """The addresses a delivery may connect to: host resolved once (within timeout), those Tarn may post to, in
    the resolver's order. Connecting only to these means a second lookup (DNS rebinding) cannot move the target."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tarn-resolve")
    try:
        infos = pool.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM).result(timeout=timeout)
    except FutureTimeout:
        raise TimeoutError(f"resolving {host} took longer than {timeout:g} s") from None
    finally:
        pool.shutdown(wait=False)
    allowed, refusals = [], []
    for family, _, _, _, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            refusal = address_refusal(sockaddr[0], allow_private)
            allowed += [(family, sockaddr)] if refusal is None else []
            refusals += [refusal] if refusal else []
    if not allowed:
        raise Refused(f"{host}: {'; '.join(dict.fromkeys(refusals)) or 'no address'}")
    return allowed


def tls_context() -> ssl.SSLContext:
    """The system's trusted CAs, certificate and host name verified (the name in the URL, not the address)."""
    return ssl.create_default_context()


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError(f"no answer within {WEBHOOK_TIMEOUT} s")
    return left


def _post(url: str, host: str, addresses: list, headers: dict, body: bytes, deadline: float) -> tuple[int, str]:
    """One POST of body to url at the first of addresses that accepts a connection (TLS verified against host, the
    URL's host name), bounded as a whole by deadline (connect, handshake, send and the answer's head). Returns
    (status, Location). Reads no body."""
    parts = urlsplit(url)
    target = quote(parts.path or "/", safe=URL_SAFE) + (f"?{quote(parts.query, safe=URL_SAFE)}" if parts.query else "")
    host_header = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    lines = [f"POST {target} HTTP/1.1", f"Host: {host_header}", *(f"{k}: {v}" for k, v in headers.items())]
    lines += [f"Content-Length: {len(body)}", "Connection: close"]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body
    refused = None
    try:
        for family, sockaddr in addresses:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.settimeout(_left(deadline))
                try:
                    sock.connect(sockaddr)
                except TimeoutError:
                    raise
                except OSError as exc:
                    refused = exc  # unreachable at this address: the next one the name resolved to
                    continue
                if parts.scheme != "https":
                    return _exchange(sock, request, deadline)
                sock.settimeout(_left(deadline))
                with tls_context().wrap_socket(sock, server_hostname=host) as tls_sock:
                    return _exchange(tls_sock, request, deadline)
    except TimeoutError:
        raise TimeoutError(f"no answer within {WEBHOOK_TIMEOUT} s") from None
    raise refused


def _exchange(sock, request: bytes, deadline: float) -> tuple[int, str]:
    """Send request, read the answer's head (each read within what is left of deadline): (status, Location)."""
    sock.settimeout(_left(deadline))
    sock.sendall(request)
    head = b""
    while True:
        while b"\r\n\r\n" not in head:
            if len(head) > MAX_HEAD:
                raise ValueError(f"an answer's head longer than {MAX_HEAD} bytes")
            sock.settimeout(_left(deadline))
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError("the receiver closed the connection without an answer")
            head += chunk
        first, _, head = head.partition(b"\r\n\r\n")
        status_line, *header_lines = first.decode("latin-1").split("\r\n")
        matched = re.fullmatch(r"HTTP/\d(?:\.\d)? (\d{3})(?: .*)?", status_line)
        if not matched:
            raise ValueError("not an HTTP answer")
        if int(matched.group(1)) >= 200:  # 1xx (100 Continue): the real answer follows
            break
    headers = (line.partition(":") for line in header_lines)
    location = next((v.strip() for k, _, v in headers if k.strip().lower() == "location"), "")
    return int(matched.group(1)), location


def _named(location: str, url: str) -> str:
    """A redirect's target as a result may name it: scheme and host (its path may be the secret, as the URL's is)."""
    absolute = urljoin(url, "".join(c for c in location if c.isprintable())[:1000])
    same = urlsplit(absolute)[2:4] == urlsplit(url)[2:4]
    return redact_url(absolute)[:200] + (" (the same path)" if same and absolute != url else "")


def send_webhook(channel: Channel, data: dict) -> tuple[bool, str]:
    """POST data as JSON to the channel's URL: only a 2xx counts; a redirect is a failure naming where it points
    (it is not followed: the body and signature would go to another host, or become a GET); a 5xx or a network
    error is tried again (WEBHOOK_ATTEMPTS), each attempt within WEBHOOK_TIMEOUT as a whole. The host is resolved
    once and must not be private, loopback or link-local unless the channel allows it."""
    parts = urlsplit(channel.url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return False, "not an http(s) URL without credentials"
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in channel.url):
        return False, "a URL with spaces or control characters"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    body = json.dumps(data, sort_keys=True).encode()
    addresses, error = None, ""
    for attempt in range(WEBHOOK_ATTEMPTS):
        deadline = time.monotonic() + WEBHOOK_TIMEOUT
        timestamp = str(int(time.time()))
        headers = {"Content-Type": "application/json", "User-Agent": "Tarn", "X-Tarn-Timestamp": timestamp}
        if channel.secret:
            headers["X-Tarn-Signature"] = signature(channel.secret, timestamp, body)
        try:
            host = parts.hostname if parts.hostname.isascii() else parts.hostname.encode("idna").decode()
            addresses = addresses or _resolve(host, port, channel.allow_private, _left(deadline))
            status, location = _post(channel.url, host, addresses, headers, body, deadline)
        except Refused as exc:
            return False, f"refused: {exc}"[:300]
        except ssl.SSLCertVerificationError as exc:
            return False, f"TLS: {exc.verify_message or exc}"[:300]  # the same certificate next time
        except ssl.SSLError as exc:
            error = f"TLS: {exc.reason or exc}"[:300]
        except (OSError, ValueError, UnicodeError) as exc:  # TimeoutError and ConnectionError are OSErrors
            error = f"{exc}"[:300] or type(exc).__name__
        else:
            if 200 <= status < 300:
                return True, f"HTTP {status}"
            if 300 <= status < 400:
                where = _named(location, channel.url) if location else "no Location"
                return False, f"HTTP {status}: a redirect, not followed (Location: {where})"[:300]
            error = f"HTTP {status}"
            if status < 500:
                break  # the receiver refused it: trying again will not help
        if attempt + 1 < WEBHOOK_ATTEMPTS:
            time.sleep(2**attempt)
    return False, error
