"""The reaper and a real Redis: a queued operation whose message the queue lost is failed and frees its target."""

import base64
import json
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from appliance.broker import queued_operation_ids
from appliance.models import Operation
from appliance.operations import operation_start
from appliance.services import operations_reap_stale
from shares.services import samba_user_start
from tests.conftest import require

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def broker():
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        client.ping()
    except redis.RedisError:
        require(False, f"Redis is not reachable at {settings.CELERY_BROKER_URL}")
    client.flushdb()  # the tests' own Redis database (15), never the appliance's
    yield client
    client.flushdb()


def test_a_queued_operation_whose_message_is_gone_is_failed_and_its_target_freed(broker, local_host, admin_user):
    kept = operation_start(kind="test.x", subject="kept", host=local_host, user=admin_user, secret="pw-not-read")
    lost = Operation.objects.create(
        kind="test.x", target="host:local:test:lost", host=local_host
    )  # as if Redis had lost its message
    Operation.objects.update(created_at=timezone.now() - timedelta(hours=1))
    assert queued_operation_ids() == {kept.pk}
    assert operations_reap_stale() == 1
    lost.refresh_from_db()
    kept.refresh_from_db()
    assert lost.status == "failed" and "message was lost" in lost.message
    assert kept.status == "queued"
    assert operation_start(kind="test.x", subject="lost", host=local_host, user=admin_user).status == "queued"


def test_a_young_queued_operation_is_left_alone(broker, local_host):
    Operation.objects.create(kind="x", target="t:new", host=local_host)  # its message may still be on its way
    assert operations_reap_stale() == 0


def test_nothing_is_judged_lost_when_the_queue_cannot_be_read(broker, local_host):
    Operation.objects.create(kind="x", target="t:old", host=local_host)
    Operation.objects.update(created_at=timezone.now() - timedelta(hours=1))
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        assert queued_operation_ids() is None
        assert operations_reap_stale() == 0
    assert Operation.objects.get().status == "queued"


def test_a_samba_password_is_not_in_redis_while_its_operation_waits(broker, local_host, admin_user):
    password = "Tr0ub4dor&3xyz"
    op = samba_user_start(host=local_host, user=admin_user, action="add", username="alice", password=password)
    assert op.pk in queued_operation_ids()
    seen = []  # every value in Redis, and each queued message's decoded body and headers
    for key in broker.scan_iter():
        values = broker.lrange(key, 0, -1) if broker.type(key) == b"list" else [broker.dump(key) or b""]
        for value in values:
            seen.append(value)
            try:
                message = json.loads(value)
            except ValueError:
                continue
            seen += [base64.b64decode(message["body"]), json.dumps(message["headers"]).encode()]
    assert seen
    for form in (password.encode(), base64.b64encode(password.encode())):
        assert not any(form in value for value in seen)
