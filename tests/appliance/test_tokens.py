"""Per-user API tokens: shown once, work as bearer tokens with the user's role, revocable."""

import re

from appliance.models import ApiToken


def make_token(client):
    response = client.post("/account/tokens/", {"name": "monitoring"})
    return re.search(r'id="new-token">(tarn_[^<]+)<', response.content.decode()).group(1)


def test_a_token_authenticates_api_calls_until_revoked(viewer_client, client):
    key = make_token(viewer_client)
    headers = {"Authorization": f"Bearer {key}"}
    assert client.get("/api/v1/hosts/", headers=headers).status_code == 200
    token = ApiToken.objects.get()
    assert token.key_hash != key and key not in token.hint  # only a hash and a short hint are stored
    viewer_client.post(f"/account/tokens/{token.pk}/revoke/")
    assert client.get("/api/v1/hosts/", headers=headers).status_code == 401


def test_a_token_carries_its_users_role(viewer_client, client):
    key = make_token(viewer_client)
    response = client.post("/api/v1/hosts/1/probe/", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 403


def test_a_bad_token_is_401_not_a_500(client, db):
    assert client.get("/api/v1/hosts/", headers={"Authorization": "Bearer tarn_nope"}).status_code == 401
    assert client.get("/api/v1/hosts/", headers={"Authorization": "Bearer a b"}).status_code == 401


def test_nobody_can_revoke_someone_elses_token(viewer_client, operator_client):
    make_token(viewer_client)
    token = ApiToken.objects.get()
    operator_client.post(f"/account/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked_at is None
