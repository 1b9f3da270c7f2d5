"""Webhook delivery against real receivers on 127.0.0.1: only a 2xx counts, a redirect is a failure naming where it
points and is not followed, a signed timestamp, a deadline for each attempt as a whole, no private, loopback or
link-local target unless the channel allows it, the host resolved once and TLS verified against its name."""

import hashlib
import hmac
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from analytics import channels, services
from analytics.models import Channel
from tests.conftest import require
from tests.support.receivers import http_receiver


@pytest.fixture
def no_waits(monkeypatch):
    monkeypatch.setattr(channels.time, "sleep", lambda seconds: None)  # the pause between attempts


def hook(url, **kwargs) -> Channel:
    return Channel.objects.create(name="hook", kind="webhook", url=url, allow_private=True, **kwargs)


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failure_naming_its_location_and_its_target_gets_nothing(db, code):
    with http_receiver() as (url, got, statuses), http_receiver() as (elsewhere, got_elsewhere, _):
        statuses.append((code, {"Location": elsewhere + "?steal=1"}))
        ok, result = services.channel_test(channel=hook(url, secret="s3cret"))
    port = elsewhere.split(":")[2].split("/")[0]
    assert not ok and result == f"HTTP {code}: a redirect, not followed (Location: http://127.0.0.1:{port}/***)"
    assert len(got) == 1 and got_elsewhere == []  # neither followed nor tried again
    assert Channel.objects.get().last_result.startswith(f"failed: HTTP {code}: a redirect")


def test_a_server_error_is_a_failure_after_every_attempt_and_a_refusal_is_not_tried_again(db, no_waits):
    with http_receiver() as (url, got, statuses):
        statuses.extend([500, 502, 503])
        assert services.channel_test(channel=hook(url)) == (False, "HTTP 503") and len(got) == 3
        statuses.append(404)
        assert services.channel_test(channel=Channel.objects.get()) == (False, "HTTP 404") and len(got) == 4
        statuses.append(204)
        assert services.channel_test(channel=Channel.objects.get()) == (True, "HTTP 204")


def test_a_delivery_is_signed_over_its_timestamp_and_body(db):
    with http_receiver() as (url, got, _):
        assert services.channel_test(channel=hook(url, secret="s3cret")) == (True, "HTTP 200")
    ((headers, body),) = got
    timestamp = headers["X-Tarn-Timestamp"]
    assert timestamp.isdigit() and abs(int(timestamp) - time.time()) < 60
    expected = hmac.new(b"s3cret", timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Tarn-Signature"], f"sha256={expected}")
    assert headers["X-Tarn-Signature"] != "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert json.loads(body)["event"] == "test" and headers["Content-Type"] == "application/json"


def test_a_loopback_target_is_refused_unless_the_channel_allows_private_addresses(db, admin_client):
    with http_receiver() as (url, got, _):
        channel = hook(url)
        Channel.objects.filter(pk=channel.pk).update(allow_private=False)  # saved before the rule, say
        channel.refresh_from_db()
        ok, result = services.channel_test(channel=channel)
        assert not ok and result.startswith("refused: 127.0.0.1: 127.0.0.1 is a loopback address")
        port = url.split(":")[2].split("/")[0]
        channel.url = f"http://localhost:{port}/hook"  # a name that resolves to loopback: the same
        ok, result = channels.send(channel, {"event": "test"})
        assert not ok and "loopback address" in result and got == []
        channel.allow_private = True
        assert channels.send(channel, {"event": "test"}) == (True, "HTTP 200") and len(got) == 1
    with pytest.raises(ValidationError) as refused:
        services.channel_save(data={"name": "lan", "kind": "webhook", "url": "http://10.0.0.7/hook"})
    assert "private or reserved address" in refused.value.message_dict["url"][0]
    body = {"name": "lan", "kind": "webhook", "url": "http://[fe80::1]/hook", "min_level": "warning"}
    api = admin_client.post("/api/v1/alert-channels/", body, content_type="application/json")
    assert api.status_code == 400 and "link-local" in api.json()["url"][0]
    api = admin_client.post("/api/v1/alert-channels/", {**body, "allow_private": True}, content_type="application/json")
    assert api.status_code == 201 and api.json()["allow_private"] is True
    page = {"name": "lo", "kind": "webhook", "min_level": "warning", "smtp_port": 587, "smtp_security": "starttls"}
    shown = admin_client.post("/alerts/channels/add/", {**page, "url": "http://localhost/x"}, follow=True)
    assert "loopback address" in shown.content.decode() and not Channel.objects.filter(name="lo").exists()
    assert admin_client.post("/alerts/channels/add/", {**page, "url": "http://localhost/x", "allow_private": "on"})
    assert Channel.objects.get(name="lo").allow_private


def test_a_name_that_resolves_to_a_private_address_is_refused_without_connecting(db, monkeypatch):
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 80))]
    )
    channel = Channel.objects.create(name="hook", kind="webhook", url="http://hooks.example.org/x")
    ok, result = channels.send(channel, {"event": "test"})
    assert not ok and result.startswith("refused: hooks.example.org: 10.1.2.3 is a private or reserved address")


def test_the_host_is_resolved_once_and_every_attempt_goes_to_the_addresses_it_resolved_to(db, monkeypatch, no_waits):
    with http_receiver() as (url, got, statuses):
        port = int(url.split(":")[2].split("/")[0])
        # the first lookup: an address nothing listens on, then the receiver's; a second would move the target
        answers = [[("127.0.0.2", port), ("127.0.0.1", port)], [("192.0.2.66", port)]]
        lookups = []

        def resolve(host, *args, **kwargs):
            lookups.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", a) for a in answers[len(lookups) - 1]]

        monkeypatch.setattr(socket, "getaddrinfo", resolve)
        statuses.append(503)
        channel = hook(f"http://hook.test:{port}/hook")
        assert channels.send(channel, {"event": "test"}) == (True, "HTTP 200")
    assert lookups == ["hook.test"] and len(got) == 2
    assert {headers["Host"] for headers, _ in got} == {f"hook.test:{port}"}


def test_an_attempt_has_a_deadline_as_a_whole_not_per_read(db, monkeypatch):
    """A receiver that drips its answer's head a line at a time never lets one read time out."""
    monkeypatch.setattr(channels, "WEBHOOK_TIMEOUT", 1)
    monkeypatch.setattr(channels, "WEBHOOK_ATTEMPTS", 1)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.wait(0.2):
                try:
                    conn.sendall(b"X-Drip: 1\r\n")
                except OSError:
                    return

    threading.Thread(target=drip, daemon=True).start()
    started = time.monotonic()
    try:
        ok, result = channels.send(hook(f"http://127.0.0.1:{listener.getsockname()[1]}/"), {"event": "test"})
    finally:
        stop.set()
        listener.close()
    assert not ok and "no answer within 1 s" in result and time.monotonic() - started < 3


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """A test CA and a certificate it signed for the name hook.test (openssl, as Debian ships it)."""
    require(shutil.which("openssl") is not None, "openssl is not installed")
    d = tmp_path_factory.mktemp("tls")
    (d / "leaf.ext").write_text(
        "subjectAltName=DNS:hook.test\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
    )
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for argv in (
        ["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Tarn test CA"]
        + ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"],
        ["req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=hook.test"],
        ["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"]
        + ["-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext"],
    ):
        subprocess.run(["openssl", *argv], cwd=d, check=True, capture_output=True)  # noqa: S603, S607
    return d


def test_tls_is_verified_against_the_urls_host_name_while_connecting_to_the_resolved_address(
    db, monkeypatch, certificates
):
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(certificates / "leaf.pem", certificates / "leaf.key")
    monkeypatch.setattr(channels, "tls_context", lambda: ssl.create_default_context(cafile=certificates / "ca.pem"))
    with http_receiver(tls=server_side) as (url, got, _):
        port = int(url.split(":")[2].split("/")[0])
        monkeypatch.setattr(
            socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        )
        assert channels.send(hook(f"https://hook.test:{port}/hook"), {"event": "test"}) == (True, "HTTP 200")
        Channel.objects.all().delete()
        ok, result = channels.send(hook(f"https://other.test:{port}/hook"), {"event": "test"})
    assert not ok and "TLS" in result and "certificate" in result.lower()
    assert len(got) == 1 and got[0][0]["Host"] == f"hook.test:{port}"


@pytest.mark.django_db(transaction=True)
def test_the_upgrade_allows_private_addresses_only_for_channels_that_named_one():
    before = [("analytics", "0002_sampler_series")]
    MigrationExecutor(connection).migrate(before)
    old = MigrationExecutor(connection).loader.project_state(before).apps.get_model("analytics", "Channel")
    for name, url in [
        ("lan", "http://192.168.1.20:8080/hook"),
        ("v6", "http://[::1]/x"),
        ("slack", "https://hooks.slack.com/s/1"),
    ]:
        old.objects.create(name=name, kind="webhook", url=url)
    old.objects.create(name="named", kind="webhook", url="http://alerts.lan/hook")  # a name: checked at delivery
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    allowed = dict(Channel.objects.values_list("name", "allow_private"))
    assert allowed == {"lan": True, "v6": True, "slack": False, "named": False}
