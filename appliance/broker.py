"""What the task queue (Redis) holds: the ids of operations whose message is waiting or being worked on.

The reaper asks this before it fails a queued operation: a message Redis lost (a restart without persistence,
a flush) leaves the row queued forever, and the one-active-operation-per-target constraint then blocks its
target. Only the first argument (the operation id) of Tarn's one operation task is read from each message.
"""

import base64
import json
import logging

import redis
from django.conf import settings

from appliance.operations import OPERATION_TASK

log = logging.getLogger(__name__)


def _operation_id(raw: bytes) -> int | None:
    try:
        message = json.loads(raw)
        if isinstance(message, list):  # the unacked hash keeps [message, exchange, routing key]
            message = message[0]
        if message.get("headers", {}).get("task") != OPERATION_TASK:
            return None
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return int(args[0])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def queued_operation_ids() -> set[int] | None:
    """Operation ids with a message in any queue or taken by a worker and not yet acknowledged; None when the
    broker cannot be read (then nothing may be judged lost)."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    try:
        client = redis.Redis.from_url(url, socket_timeout=5)
        found = set()
        for key in client.scan_iter(count=500):
            kind = client.type(key)
            values = client.lrange(key, 0, -1) if kind == b"list" else client.hvals(key) if key == b"unacked" else []
            found.update(i for i in map(_operation_id, values) if i is not None)
        return found
    except redis.RedisError as exc:
        log.warning("could not read the task queue to find lost operations: %s", exc)
        return None
