"""Delivery: an e-mail through the channel's SMTP server (Django's SMTP backend, TLS as chosen, a timeout) and a
webhook (a JSON POST signed with HMAC-SHA256 of the body, retried, a timeout on each attempt). Each returns
(ok, what happened); nothing here raises, so a broken channel never stops another."""

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request

from django.core.mail import EmailMessage, get_connection

from analytics.choices import SMTP_TIMEOUT, WEBHOOK_ATTEMPTS, WEBHOOK_TIMEOUT, SmtpSecurity
from analytics.models import Channel


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


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def send(channel: Channel, data: dict) -> tuple[bool, str]:
    try:
        return (send_email if channel.kind == "email" else send_webhook)(channel, data)
    except Exception as exc:  # noqa: BLE001 (any failure of a channel is its result, never another's problem)
        return False, f"{type(exc).__name__}: {str(exc)[:300]}"


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
    what = "cleared" if data["event"] == "cleared" else data["level"].upper()
    subject = f"[Tarn {what}] {data['message']}"[:200]
    body = "\n".join(f"{k}: {v}" for k, v in data.items() if v is not None)
    recipients = [r.strip() for r in channel.recipients.split(",") if r.strip()]
    EmailMessage(subject, body, channel.sender, recipients, connection=connection).send()
    return True, f"sent to {len(recipients)} recipient{'s' * (len(recipients) != 1)}"


def send_webhook(channel: Channel, data: dict) -> tuple[bool, str]:
    body = json.dumps(data, sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "Tarn"}
    if channel.secret:
        headers["X-Tarn-Signature"] = signature(channel.secret, body)
    error = ""
    for attempt in range(WEBHOOK_ATTEMPTS):
        request = urllib.request.Request(channel.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT) as response:  # noqa: S310 (http(s) only: forms)
                return True, f"HTTP {response.status}"
        except urllib.error.HTTPError as exc:
            error = f"HTTP {exc.code}"
            if exc.code < 500:
                break  # the receiver refused it: trying again will not help
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            error = f"{getattr(exc, 'reason', exc)}"[:300]
        if attempt + 1 < WEBHOOK_ATTEMPTS:
            time.sleep(2**attempt)
    return False, error
