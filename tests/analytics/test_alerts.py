"""Alerts from the inventory: raised once, cleared when the condition ends, each delivered to a real SMTP server
(aiosmtpd) and a real HTTP receiver with its signature checked; a broken channel holds up no other; bad channel
and rule input is refused naming the field."""

import hashlib
import hmac
import json
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from analytics import services
from analytics.models import Alert, Channel, RuleSetting
from appliance.services import api_token_create
from benchmarks.models import Run
from pools.models import Pool, Vdev
from tests.support.pages import shown_again
from tests.support.receivers import evaluate, free_port


@pytest.fixture
def tank(local_host):
    return Pool.objects.create(
        host=local_host,
        name="tank",
        guid="1",
        state="ONLINE",
        capacity=40,
        scan_end=timezone.now(),
        observed_at=timezone.now(),
    )


def test_a_degraded_pool_is_raised_once_delivered_by_mail_and_webhook_and_cleared(
    local_host, tank, smtp, receiver, django_capture_on_commit_callbacks
):
    controller, inbox = smtp
    url, got, _ = receiver
    Channel.objects.create(
        name="ops mail",
        kind="email",
        smtp_host="127.0.0.1",
        smtp_port=controller.port,
        smtp_security="none",
        sender="tarn@example.org",
        recipients="ops@example.org, me@example.org",
    )
    Channel.objects.create(name="hook", kind="webhook", url=url, secret="s3cret", allow_private=True)
    dead = f"http://127.0.0.1:{free_port()}/"  # nothing listens
    Channel.objects.create(name="dead", kind="webhook", url=dead, allow_private=True)
    assert evaluate(local_host, django_capture_on_commit_callbacks) == ([], [])
    Pool.objects.filter(pk=tank.pk).update(state="DEGRADED")
    raised, cleared = evaluate(local_host, django_capture_on_commit_callbacks)
    assert [(a.rule, a.subject, a.level) for a in raised] == [("pool_state", "tank", "critical")] and not cleared
    assert evaluate(local_host, django_capture_on_commit_callbacks) == ([], [])  # raised once
    ((rcpts, mail),) = inbox.messages
    assert (
        rcpts == ["ops@example.org", "me@example.org"]
        and mail["Subject"] == "[Tarn] critical: Pool not ONLINE on local"
    )
    ((headers, body),) = got
    signed = headers["X-Tarn-Timestamp"].encode() + b"." + body
    assert headers["X-Tarn-Signature"] == "sha256=" + hmac.new(b"s3cret", signed, hashlib.sha256).hexdigest()
    assert json.loads(body)["event"] == "raised" and json.loads(body)["level"] == "critical"
    alert = Alert.objects.get()
    outcomes = {(d["channel"], d["ok"]) for d in alert.deliveries}
    assert outcomes == {("ops mail", True), ("hook", True), ("dead", False)}  # the dead one held up nobody
    Pool.objects.filter(pk=tank.pk).update(state="ONLINE")
    raised, cleared = evaluate(local_host, django_capture_on_commit_callbacks)
    assert not raised and [a.pk for a in cleared] == [alert.pk]
    assert len(inbox.messages) == 2 and inbox.messages[1][1]["Subject"] == "[Tarn] cleared: Pool not ONLINE on local"
    assert json.loads(got[1][1])["event"] == "cleared"


def test_capacity_errors_scrubs_hosts_and_benchmarks_raise_their_rules(
    local_host, tank, admin_user, django_capture_on_commit_callbacks
):
    Pool.objects.filter(pk=tank.pk).update(capacity=85)
    assert [a.rule for a in evaluate(local_host, django_capture_on_commit_callbacks)[0]] == ["capacity_warning"]
    Pool.objects.filter(pk=tank.pk).update(
        capacity=93, scan_function="SCRUB", scan_errors=2, scan_end=timezone.now() - timedelta(days=40)
    )
    Vdev.objects.create(pool=tank, position=0, name="sda", type="disk", role="data", state="ONLINE", checksum_errors=4)
    local_host.facts_error = "ssh: connect to host nas port 22: No route to host"
    local_host.save()
    Run.objects.create(
        host=local_host,
        profile="seq-write-1",
        title="Seq",
        target="tank/a",
        outcome="failed",
        message="fio ended with exit-code",
        finished_at=timezone.now(),
    )
    Run.objects.create(
        host=local_host,
        profile="seq-write-1",
        title="Nightly",
        target="tank/a",
        outcome="succeeded",
        flag="40% below the median of the previous 5 runs",
    )
    raised, cleared = evaluate(local_host, django_capture_on_commit_callbacks)
    assert sorted(a.rule for a in raised) == [
        "benchmark_drop",
        "benchmark_failed",
        "capacity_critical",
        "host_unreachable",
        "pool_errors",
        "scrub_errors",
        "scrub_overdue",
    ]
    assert [a.rule for a in cleared] == ["capacity_warning"]  # became critical: the warning ends
    assert "No route to host" in Alert.objects.get(rule="host_unreachable").message


def test_a_webhook_that_fails_at_first_is_tried_again(local_host, receiver):
    url, got, statuses = receiver
    statuses.append(503)
    channel = Channel.objects.create(name="hook", kind="webhook", url=url, allow_private=True)
    assert services.channel_test(channel=channel) == (True, "HTTP 200") and len(got) == 2


def test_the_bell_counts_open_alerts_on_every_page(admin_client, local_host, tank):
    assert (
        'id="bell"' in admin_client.get("/").content.decode()
        and "ringing" not in admin_client.get("/").content.decode()
    )
    Alert.objects.create(
        host=local_host, rule="pool_state", subject="tank", level="critical", message="tank is FAULTED"
    )
    page = admin_client.get("/").content.decode()
    assert 'class="bell ringing"' in page and '<span class="count">1</span>' in page
    assert "tank is FAULTED" in admin_client.get("/alerts/").content.decode()


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"kind": "webhook", "url": "ftp://example.org/x"}, "An http:// or https:// URL"),
        ({"kind": "webhook", "url": "https://user:pw@example.org/x"}, "No credentials in the URL"),
        (
            {"kind": "email", "smtp_host": "mail", "smtp_port": 70000, "sender": "a@b.org", "recipients": "c@d.org"},
            "a port from 1 to 65535",
        ),
        (
            {"kind": "email", "smtp_host": "mail", "sender": "a@b.org", "recipients": "not an address"},
            "each recipient: an e-mail address",
        ),
        ({"kind": "email", "smtp_host": "", "sender": "a@b.org", "recipients": "c@d.org"}, "The SMTP server"),
    ],
)
def test_bad_channels_are_refused_saying_why_and_nothing_is_saved(admin_client, data, says):
    body = {"name": "x", "enabled": "on", "min_level": "warning", "smtp_port": 587, "smtp_security": "starttls", **data}
    page = admin_client.post("/alerts/channels/add/", body, follow=True)
    assert page.status_code == 200 and says in page.content.decode(), page.content.decode()[-3000:]
    assert not Channel.objects.exists()
    assert "user:pw" not in page.content.decode()  # a URL's credentials are not echoed back


def rule_row(response, key: str) -> str:
    """The rule's row as the alerts page shows it again: its inputs belong to the row's form."""
    return shown_again(response, f"rule-row-{key}", "</tr>")


def test_a_rule_threshold_outside_its_limits_is_refused(admin_client, viewer_client):
    """The service's refusal and the form's own come back in the rule's row, as typed, under the field; nothing is
    saved."""
    body = {"key": "capacity_warning", "enabled": "on", "level": "critical", "threshold": 120}
    row = rule_row(admin_client.post("/alerts/rules/", body), "capacity_warning")
    assert "Pool filling: 50 to 99 %" in row and 'value="120"' in row and '"critical" selected' in row, row
    row = rule_row(admin_client.post("/alerts/rules/", {**body, "threshold": "lots"}), "capacity_warning")
    assert "A number written with the digits 0-9" in row and 'value="lots"' in row, row
    row = rule_row(admin_client.post("/alerts/rules/", {**body, "threshold": ""}), "capacity_warning")
    assert "Pool filling: 50 to 99 %" in row, row
    assert "Not a rule" in admin_client.post("/alerts/rules/", {**body, "key": "nope"}).content.decode()
    assert not RuleSetting.objects.exists()
    admin_client.post(
        "/alerts/rules/", {"key": "capacity_warning", "enabled": "on", "level": "critical", "threshold": 70}
    )
    page = admin_client.get("/alerts/").content.decode()
    assert 'value="70"' in page
    assert viewer_client.post("/alerts/rules/", {"key": "capacity_warning", "level": "warning"}).status_code == 403


def test_the_api_keeps_secrets_write_only_and_names_the_field_of_bad_input(admin_client, operator_client):
    body = {"name": "hook", "kind": "webhook", "url": "https://example.org/hook", "secret": "s3cret"}
    created = admin_client.post("/api/v1/alert-channels/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert "secret" not in created.json() and Channel.objects.get().secret == "s3cret"
    bad = admin_client.post(
        "/api/v1/alert-channels/",
        {**body, "name": "two", "url": "https://u:p@example.org/"},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "url" in bad.json() and "u:p" not in bad.content.decode()
    assert operator_client.get("/api/v1/alert-channels/").status_code == 403  # admins only: it holds secrets
    rule = admin_client.put(
        "/api/v1/alert-rules/capacity_warning/",
        {"enabled": True, "level": "warning", "threshold": 101},
        content_type="application/json",
    )
    assert rule.status_code == 400 and "threshold" in rule.json()
    ok = admin_client.put(
        "/api/v1/alert-rules/capacity_warning/",
        {"enabled": True, "level": "critical", "threshold": 75},
        content_type="application/json",
    )
    assert ok.status_code == 200 and ok.json()["threshold"] == 75 and ok.json()["level"] == "critical"
    assert operator_client.get("/api/v1/alerts/?open=1").status_code == 200


def test_metrics_need_a_token_and_parse_as_prometheus_text(client, local_host, tank, admin_user):
    assert client.get("/metrics").status_code == 401
    _, key = api_token_create(user=admin_user, name="prometheus")
    Pool.objects.filter(pk=tank.pk).update(size=100, allocated=40, state="DEGRADED")
    Alert.objects.create(host=local_host, rule="pool_state", subject="tank", level="critical", message="x")
    response = client.get("/metrics", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}
    assert samples[("tarn_pool_state", (("host", "local"), ("pool", "tank"), ("state", "DEGRADED")))] == 1
    assert samples[("tarn_pool_capacity_ratio", (("host", "local"), ("pool", "tank")))] == 0.4
    assert samples[("tarn_alerts_open", (("level", "critical"),))] == 1
    assert samples[("tarn_host_up", (("host", "local"),))] == 1


def test_a_capacity_alert_clears_only_two_points_below_its_threshold(
    local_host, tank, django_capture_on_commit_callbacks
):
    """80 % ± 1 would raise and clear at every refresh: an open capacity alert holds down to threshold - 2."""
    Pool.objects.filter(pk=tank.pk).update(capacity=80)
    assert [a.rule for a in evaluate(local_host, django_capture_on_commit_callbacks)[0]] == ["capacity_warning"]
    Pool.objects.filter(pk=tank.pk).update(capacity=79)
    assert evaluate(local_host, django_capture_on_commit_callbacks) == ([], [])  # still open
    Pool.objects.filter(pk=tank.pk).update(capacity=77)
    raised, cleared = evaluate(local_host, django_capture_on_commit_callbacks)
    assert not raised and [a.rule for a in cleared] == ["capacity_warning"]
    Pool.objects.filter(pk=tank.pk).update(capacity=79)
    assert evaluate(local_host, django_capture_on_commit_callbacks) == ([], []), "below the threshold: not raised"


def test_a_flapping_pool_is_sent_three_times_then_shown_but_not_sent(
    local_host, tank, receiver, django_capture_on_commit_callbacks
):
    url, got, _ = receiver
    Channel.objects.create(name="hook", kind="webhook", url=url, allow_private=True)
    for state in ["DEGRADED", "ONLINE"] * 4:
        Pool.objects.filter(pk=tank.pk).update(state=state)
        evaluate(local_host, django_capture_on_commit_callbacks)
    events = [json.loads(body)["event"] for _, body in got]
    assert events == ["raised", "cleared", "raised", "cleared"], "the third raise within the hour is not sent"
    assert Alert.objects.count() == 4  # every one is still shown
    last = Alert.objects.order_by("-pk").first()
    assert [d["result"] for d in last.deliveries] == [services.FLAPPING, services.FLAPPING]
    Pool.objects.create(host=local_host, name="other", guid="2", state="FAULTED", observed_at=timezone.now())
    evaluate(local_host, django_capture_on_commit_callbacks)
    assert json.loads(got[-1][1])["subject"] == "other", "a limit per rule and subject: another pool is sent"
