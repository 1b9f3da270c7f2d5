"""What the tuning services share: a host's tuning target (one change at a time per host) and ending a change set."""

from django.utils import timezone

from tuning.choices import ChangeStatus
from tuning.models import ChangeSet

TUNING = "tuning"  # the lock every change of a host's tuning holds (one at a time); plan, keep and refresh have theirs


def change_end(cs: ChangeSet, status: str, message: str = "") -> None:
    cs.status, cs.message = status, message[:1000]
    if status not in (ChangeStatus.PLANNING, ChangeStatus.APPLYING, ChangeStatus.PENDING):
        cs.ended_at = timezone.now()
    cs.save(update_fields=["status", "message", "ended_at"])
