"""Real receivers for alert deliveries: an SMTP server (aiosmtpd) and an HTTP server, each on a free local port,
recording what they got; channels pointing at them; an evaluation that delivers at once."""

import socket
import threading
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from aiosmtpd.controller import Controller

from analytics import services
from analytics.models import Channel


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def smtp():
    class Inbox:
        messages = []

        async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
            self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
            return "250 OK"

    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield controller, inbox
    controller.stop()


@pytest.fixture
def receiver():
    got, statuses = [], []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's hook name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((dict(self.headers), body))
            self.send_response(statuses.pop(0) if statuses else 200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/hook", got, statuses
    server.shutdown()


def channels_to(smtp_port: int, url: str, secret: str = "s") -> None:
    Channel.objects.create(
        name="mail",
        kind="email",
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        smtp_security="none",
        sender="tarn@example.org",
        recipients="ops@example.org",
    )
    Channel.objects.create(name="hook", kind="webhook", url=url, secret=secret)


def evaluate(host, capture):
    """alerts_evaluate with its deliveries made inline when the transaction commits (no worker)."""
    with capture(execute=True):
        return services.alerts_evaluate(
            host=host, deliver=lambda a, c, e: services.alert_deliver(alert_id=a, channel_id=c, event=e)
        )
