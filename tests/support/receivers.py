"""Real receivers for alert deliveries: an SMTP server (aiosmtpd) and an HTTP server (answering as told: a status,
a redirect), each on a free local port, recording what they got; channels pointing at them (allowed to post to a
loopback address); an evaluation that delivers at once."""

import socket
import threading
from contextlib import contextmanager
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


@contextmanager
def http_receiver(tls=None):
    """An HTTP server on 127.0.0.1 in a thread (HTTPS with tls, a server-side SSLContext): yields (url, got,
    statuses). got: (headers, body) of every request (a GET's body is b""); statuses: what to answer next — a code,
    or (code, {header: value}) — else 200."""
    got, statuses = [], []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: bytes) -> None:
            got.append((dict(self.headers), body))
            answer = statuses.pop(0) if statuses else 200
            code, headers = answer if isinstance(answer, tuple) else (answer, {})
            self.send_response(code)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):  # noqa: N802 (http.server's hook name)
            self._answer(self.rfile.read(int(self.headers["Content-Length"])))

        def do_GET(self):  # noqa: N802 (a followed redirect arrives as a GET)
            self._answer(b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_port}/hook", got, statuses
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def receiver():
    with http_receiver() as served:
        yield served


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
    Channel.objects.create(name="hook", kind="webhook", url=url, secret=secret, allow_private=True)  # 127.0.0.1


def evaluate(host, capture):
    """alerts_evaluate with its deliveries made inline when the transaction commits (no worker)."""
    with capture(execute=True):
        return services.alerts_evaluate(
            host=host, deliver=lambda a, c, e: services.alert_deliver(alert_id=a, channel_id=c, event=e)
        )
