"""What the tuning services share: a host's tuning target (one change at a time per host) and ending a change set."""

from django.utils import timezone

from appliance.models import Host
from tuning.choices import ChangeStatus
from tuning.models import ChangeSet


def change_target(host: Host) -> str:
    return f"host:{host.name}:tuning"


def change_end(cs: ChangeSet, status: str, message: str = "") -> None:
    cs.status, cs.message = status, message[:1000]
    if status not in (ChangeStatus.PLANNING, ChangeStatus.APPLYING, ChangeStatus.PENDING):
        cs.ended_at = timezone.now()
    cs.save(update_fields=["status", "message", "ended_at"])
