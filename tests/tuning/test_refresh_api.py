"""Refresh links and values through the API: the page's operation (202 + the operation to follow), admins only, and
a bad host a 400 naming the field."""

import pytest

from appliance.models import Operation


def refresh(client, body):
    return client.post("/api/v1/links/refresh/", body, content_type="application/json")


def test_an_admin_starts_the_same_refresh_the_page_starts(admin_client, local_host, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        response = refresh(admin_client, {"host": "local"})
    assert response.status_code == 202, response.content
    op = Operation.objects.get()
    body = response.json()
    assert (body["id"], body["kind"], body["host"], body["status"]) == (op.pk, "tuning.refresh", "local", "queued")
    assert op.user.username == "alice"
    Operation.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=False):
        assert admin_client.post("/tuning/refresh/").status_code == 302
    assert Operation.objects.get().kind == "tuning.refresh"


def test_a_second_refresh_while_one_is_queued_is_a_400(admin_client, local_host, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        assert refresh(admin_client, {"host": "local"}).status_code == 202
        again = refresh(admin_client, {"host": "local"})
    assert again.status_code == 400 and "already running" in str(again.json()), again.content
    assert Operation.objects.count() == 1


def test_operators_and_viewers_may_not_refresh_as_on_the_page(operator_client, viewer_client, local_host):
    for client in (operator_client, viewer_client):
        assert refresh(client, {"host": "local"}).status_code == 403
        assert client.post("/tuning/refresh/").status_code == 403
    assert not Operation.objects.exists()


@pytest.mark.parametrize("body", [{"host": "nohost"}, {}, {"host": ""}])
def test_a_bad_host_is_a_400_naming_the_field(admin_client, local_host, body):
    response = refresh(admin_client, body)
    assert response.status_code == 400 and "host" in response.json(), response.content
    assert not Operation.objects.exists()
