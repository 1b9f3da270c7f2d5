"""Login: one generic message, rate limit after repeated failures, audit of attempts."""

import time

from django.test import override_settings

from appliance import services
from appliance.models import AuditEntry, LoginAttempts
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


@override_settings(TARN_LOGIN_MAX_FAILURES=3, TARN_LOGIN_MAX_PER_ADDRESS=6)
def test_an_address_spraying_many_names_is_throttled_too(client, admin_user):
    for name in ["a", "b", "c", "d", "e", "f"]:
        client.post("/login/", {"username": name, "password": "nope"})
    assert client.post("/login/", {"username": "alice", "password": PASSWORD}).status_code == 429


@override_settings(TARN_LOGIN_MAX_FAILURES=3)
def test_failures_from_one_address_do_not_lock_the_user_out_from_another(client, admin_user):
    for _ in range(5):
        client.post("/login/", {"username": "alice", "password": "nope"}, REMOTE_ADDR="10.0.0.66")
    assert (
        client.post("/login/", {"username": "alice", "password": PASSWORD}, REMOTE_ADDR="10.0.0.66").status_code == 429
    )
    elsewhere = client.post("/login/", {"username": "alice", "password": PASSWORD}, REMOTE_ADDR="10.0.0.7")
    assert elsewhere.status_code == 302 and "_auth_user_id" in client.session


@override_settings(TARN_LOGIN_MAX_FAILURES=3)
def test_attempts_are_counted_before_the_password_is_checked(client, admin_user):
    """Counting first means guesses sent in parallel cannot all slip in before the failures are recorded."""
    for _ in range(3):
        assert services.login_attempt_allowed(username="alice", address="10.0.0.9")
    assert not services.login_attempt_allowed(username="alice", address="10.0.0.9")
    assert LoginAttempts.objects.get(username="alice", address="10.0.0.9").count == 4


def test_a_success_clears_the_count(client, admin_user):
    client.post("/login/", {"username": "alice", "password": "nope"})
    client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert not LoginAttempts.objects.exists()


def test_a_user_changes_their_password_with_the_old_one_and_at_least_12_characters(viewer_client, viewer_user):
    short = viewer_client.post(
        "/account/password/", {"old_password": PASSWORD, "new_password1": "short-pw-1", "new_password2": "short-pw-1"}
    )
    assert "at least 12 characters" in short.content.decode()
    wrong = viewer_client.post(
        "/account/password/",
        {"old_password": "nope", "new_password1": "a-much-longer-pw", "new_password2": "a-much-longer-pw"},
    )
    assert "old password was entered incorrectly" in wrong.content.decode()
    done = viewer_client.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": "a-much-longer-pw", "new_password2": "a-much-longer-pw"},
    )
    assert done.status_code == 302 and viewer_client.get("/").status_code == 200  # still logged in
    viewer_user.refresh_from_db()
    assert viewer_user.check_password("a-much-longer-pw")


@override_settings(TARN_SESSION_IDLE_SECONDS=60)
def test_an_idle_session_ends(admin_client):
    assert admin_client.get("/").status_code == 200
    session = admin_client.session
    session["seen_at"] = int(time.time()) - 120
    session.save()
    assert admin_client.get("/").status_code == 302
    assert admin_client.get("/").status_code == 302  # logged out for good


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
