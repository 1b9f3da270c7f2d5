"""Login: one generic message, rate limit after repeated failures, audit of attempts."""

from django.test import override_settings

from appliance.models import AuditEntry
from tests.conftest import PASSWORD


def test_it_logs_in_and_lands_on_the_dashboard(client, admin_user):
    response = client.post("/login/", {"username": "alice", "password": PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert b"Dashboard" in response.content


def test_wrong_password_and_unknown_user_get_the_same_message(client, admin_user):
    wrong = client.post("/login/", {"username": "alice", "password": "nope"})
    unknown = client.post("/login/", {"username": "nobody", "password": "nope"})
    assert b"Wrong username or password." in wrong.content
    assert b"Wrong username or password." in unknown.content
    assert wrong.status_code == unknown.status_code == 200


@override_settings(TARN_LOGIN_MAX_FAILURES=3)
def test_it_refuses_even_the_right_password_after_repeated_failures(client, admin_user):
    for _ in range(3):
        client.post("/login/", {"username": "alice", "password": "nope"})
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 429
    assert b"Too many failed logins" in response.content
    assert "_auth_user_id" not in client.session


@override_settings(TARN_LOGIN_MAX_FAILURES=3)
def test_the_limit_also_applies_per_address_across_usernames(client, admin_user):
    for name in ["a", "b", "c"]:
        client.post("/login/", {"username": name, "password": "nope"})
    assert client.post("/login/", {"username": "alice", "password": PASSWORD}).status_code == 429


def test_login_attempts_are_audited_without_the_password(client, admin_user):
    client.post("/login/", {"username": "alice", "password": "nope-secret"})
    entry = AuditEntry.objects.get(path="/login/")
    assert entry.username == "alice" and entry.method == "POST"
    assert "nope-secret" not in str(entry.__dict__)


def test_logout_needs_a_post_and_ends_the_session(admin_client):
    assert admin_client.get("/").status_code == 200
    admin_client.post("/logout/")
    assert admin_client.get("/").status_code == 302


def test_next_is_followed_only_within_tarn(client, admin_user):
    inside = client.post("/login/?next=/audit/", {"username": "alice", "password": PASSWORD})
    assert inside["Location"] == "/audit/"
    client.post("/logout/")
    outside = client.post("/login/?next=https://evil.example/", {"username": "alice", "password": PASSWORD})
    assert outside["Location"] == "/"
