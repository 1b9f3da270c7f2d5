"""E-mail channels: a subject in Tarn's own words (what a NAS reports stays in the body, delivered to a real SMTP
server), and a saved SMTP password never carried over to another server or user."""

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from analytics import services
from analytics.models import Channel
from pools.models import Pool
from tests.support.receivers import evaluate


def test_what_a_nas_reports_stays_out_of_the_subject(local_host, smtp, django_capture_on_commit_callbacks):
    controller, inbox = smtp
    Channel.objects.create(
        name="mail",
        kind="email",
        smtp_host="127.0.0.1",
        smtp_port=controller.port,
        smtp_security="none",
        sender="tarn@example.org",
        recipients="ops@example.org",
    )
    Pool.objects.create(
        host=local_host,
        name="canarypool",
        guid="1",
        state="FAULTED",
        capacity=10,
        scan_end=timezone.now(),
        observed_at=timezone.now(),
    )
    local_host.facts_error = "ssh: CANARY-NAS-TEXT Subject: urgent, wire money"
    local_host.save()
    raised, _ = evaluate(local_host, django_capture_on_commit_callbacks)
    assert sorted(a.rule for a in raised) == ["host_unreachable", "pool_state"]
    subjects = sorted(mail["Subject"] for _, mail in inbox.messages)
    assert subjects == ["[Tarn] critical: Host unreachable on local", "[Tarn] critical: Pool not ONLINE on local"]
    bodies = "".join(mail.get_payload() for _, mail in inbox.messages)
    assert "canarypool" in bodies and "CANARY-NAS-TEXT" in bodies  # the body says what the NAS said
    Pool.objects.filter(name="canarypool").update(state="ONLINE")
    evaluate(local_host, django_capture_on_commit_callbacks)
    assert "[Tarn] cleared: Pool not ONLINE on local" in [mail["Subject"] for _, mail in inbox.messages]


@pytest.fixture
def mail(db):
    return services.channel_save(
        data={
            "name": "mail",
            "kind": "email",
            "smtp_host": "mail.example.org",
            "smtp_port": 587,
            "smtp_username": "tarn",
            "smtp_password": "old-secret",
            "sender": "tarn@example.org",
            "recipients": "ops@example.org",
        }
    )


SERVER_CHANGES = [{"smtp_host": "mail.attacker.example"}, {"smtp_port": 2525}, {"smtp_username": "someone"}]


@pytest.mark.parametrize("change", SERVER_CHANGES)
def test_a_saved_smtp_password_must_be_entered_again_for_another_server(mail, change):
    with pytest.raises(ValidationError) as refused:
        services.channel_save(data={**change, "smtp_password": ""}, pk=mail.pk)
    assert "enter the password again" in refused.value.message_dict["smtp_password"][0]
    saved = Channel.objects.get()
    assert (saved.smtp_host, saved.smtp_port, saved.smtp_username, saved.smtp_password) == (
        "mail.example.org",
        587,
        "tarn",
        "old-secret",
    )
    services.channel_save(data={**change, "smtp_password": "new-secret"}, pk=mail.pk)
    assert Channel.objects.get().smtp_password == "new-secret"


def test_the_password_is_kept_while_the_server_stays_and_dropped_with_the_user(mail):
    services.channel_save(data={"recipients": "me@example.org", "smtp_password": ""}, pk=mail.pk)
    assert Channel.objects.get().smtp_password == "old-secret"
    services.channel_save(data={"smtp_host": "relay.lan", "smtp_username": "", "smtp_password": ""}, pk=mail.pk)
    saved = Channel.objects.get()
    assert (saved.smtp_host, saved.smtp_username, saved.smtp_password) == ("relay.lan", "", "")


def test_the_page_and_the_api_name_the_smtp_password_field(admin_client, mail):
    api = admin_client.patch(
        f"/api/v1/alert-channels/{mail.pk}/", {"smtp_host": "mail.attacker.example"}, content_type="application/json"
    )
    assert api.status_code == 400 and list(api.json()) == ["smtp_password"]
    form = {
        "name": "mail",
        "kind": "email",
        "enabled": "on",
        "min_level": "warning",
        "smtp_host": "mail.attacker.example",
        "smtp_port": 587,
        "smtp_security": "starttls",
        "smtp_username": "tarn",
        "smtp_password": "",
        "sender": "tarn@example.org",
        "recipients": "ops@example.org",
    }
    page = admin_client.post(f"/alerts/channels/{mail.pk}/", form)
    assert page.status_code == 200
    field = page.context["form"]["smtp_password"]
    assert "enter the password again" in " ".join(field.errors) and "has-error" in page.content.decode()
    assert Channel.objects.get().smtp_host == "mail.example.org"
    ok = admin_client.post(f"/alerts/channels/{mail.pk}/", {**form, "smtp_password": "new-secret"})
    assert ok.status_code == 302 and Channel.objects.get().smtp_password == "new-secret"
