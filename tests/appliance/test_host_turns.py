"""A host's changes run one at a time wherever its queue is served (appliance.operations.turn_take): the oldest
queued change first, another host's at once, a dead worker's turn taken back once the reaper failed its change."""

from datetime import timedelta

import pytest
from django.utils import timezone

from appliance.models import Host, HostTurn, Operation
from appliance.operations import turn_give_back, turn_take
from tests.support import runners  # noqa: F401 - registers test.pause (host queue) and test.bench (bench queue)

pytestmark = pytest.mark.django_db


def queued(host, subject, kind="test.pause") -> Operation:
    return Operation.objects.create(kind=kind, target=f"host:{host.name}:{kind}:{subject}", host=host)


def test_the_oldest_change_of_a_host_takes_its_turn_and_another_host_is_not_held(local_host):
    other = Host.objects.create(name="nasb", address="192.0.2.2")
    first, second = queued(local_host, "a"), queued(local_host, "b")
    assert not turn_take(second.pk)  # the older one goes first
    assert turn_take(first.pk) and turn_take(first.pk)  # a redelivered message of the holder keeps it
    assert not turn_take(second.pk)
    assert turn_take(queued(other, "c").pk)  # another host: its own turn
    assert turn_take(queued(local_host, "bench", kind="test.bench").pk)  # the bench queue is not the host's changes
    Operation.objects.filter(pk=first.pk).update(status="succeeded")
    turn_give_back(first.pk)
    assert turn_take(second.pk)


def test_a_turn_whose_change_ended_without_giving_it_back_is_taken_back(local_host):
    dead, waiting = queued(local_host, "a"), queued(local_host, "b")
    assert turn_take(dead.pk)
    Operation.objects.filter(pk=dead.pk).update(status="failed")  # the reaper failed it: its worker died
    assert turn_take(waiting.pk) and HostTurn.objects.get(host=local_host).operation_id == waiting.pk


def test_an_operation_no_longer_queued_or_without_a_host_needs_no_turn(local_host):
    gone = queued(local_host, "a")
    Operation.objects.filter(pk=gone.pk).update(status="failed")
    assert turn_take(gone.pk) and not HostTurn.objects.exists()
    assert turn_take(Operation.objects.create(kind="test.pause", target="tarn:x").pk)


def test_a_second_delivery_of_a_running_changes_message_leaves_it_its_turn(local_host):
    running, later = queued(local_host, "a"), queued(local_host, "b")
    assert turn_take(running.pk)
    Operation.objects.filter(pk=running.pk).update(status="running")
    assert turn_take(running.pk)  # the duplicate: not queued any more, so it needs no turn and will skip…
    turn_give_back(running.pk)  # …and gives back nothing of the running one's
    assert HostTurn.objects.get(host=local_host).operation_id == running.pk and not turn_take(later.pk)


def test_an_older_change_whose_message_was_stranded_holds_no_one_back(local_host):
    stranded, later = queued(local_host, "a"), queued(local_host, "b")
    assert not turn_take(later.pk)  # the older one has not been seen yet, but is young: it goes first
    Operation.objects.filter(pk=stranded.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    assert turn_take(later.pk)  # it stopped going round (its worker was lost): the later one runs
