"""Run rows tied to their Operation (a benchmark run, a replication task's run): their status is read, never kept.

A run's lifecycle is its Operation's: queued, running, then how the Operation ended. The row keeps only what is its
own: its end where the Operation's does not say it (OWN_END: a cancelled benchmark, whose Operation ends well; one
run of a suite, which shares the suite's Operation) and whether it began (STARTED: a suite's runs take turns under
one running Operation). So the moment the core's reaper fails the Operation of a worker that died, or a lost message
fails a queued one, its run reads failed, with the Operation's message: nothing has to find the row and mend it."""

from django.db import models
from django.db.models import Case, F, Q, Value, When

from appliance.choices import OperationStatus, RunStatus


class RunQuerySet(models.QuerySet):
    def status_in(self, *statuses: str):
        """The runs whose status (as OperationRun.status reads it) is one of these, in one query."""
        return self.alias(run_status=self.model.status_sql()).filter(run_status__in=statuses)


class OperationRun:
    """Mixed into a model with `operation` (a key to its Operation) and `message` (its own last word)."""

    OWN_END = ""  # the field holding the run's own end in RunStatus words ('' until then), if it keeps one (and
    # then its time in finished_at)
    STARTED = ""  # the field set when the run begins, if its Operation runs several runs in turn

    @property
    def status(self) -> str:
        own = getattr(self, self.OWN_END) if self.OWN_END else ""
        if own:
            return own
        if self.operation_id is None:
            return RunStatus.FAILED  # its Operation is gone: it cannot be under way
        status = self.operation.status
        if status == OperationStatus.RUNNING and self.STARTED and getattr(self, self.STARTED) is None:
            return RunStatus.QUEUED  # its turn has not come
        return status

    def get_status_display(self) -> str:
        return RunStatus(self.status).label

    @property
    def is_active(self) -> bool:
        return self.status in RunStatus.active()

    @property
    def ended_by_operation(self) -> bool:
        """It ended without a word of its own: its Operation did (a worker that died, a lost message)."""
        return not (self.OWN_END and getattr(self, self.OWN_END)) and self.status in RunStatus.ended()

    @property
    def ended_at(self):
        """When it ended (None while it has not): its own end's time, else its Operation's."""
        if self.status not in RunStatus.ended():
            return None
        if not self.ended_by_operation:
            return self.finished_at
        return self.operation.finished_at if self.operation_id else None

    @property
    def status_message(self) -> str:
        """Its own message, else (ended by its Operation) the Operation's, which says why."""
        if self.message or not self.ended_by_operation or self.operation_id is None:
            return self.message
        return self.operation.message

    @classmethod
    def status_sql(cls) -> Case:
        """The status property as a database expression (for filters)."""
        whens = [When(~Q(**{cls.OWN_END: ""}), then=F(cls.OWN_END))] if cls.OWN_END else []
        whens.append(When(operation__isnull=True, then=Value(RunStatus.FAILED)))
        if cls.STARTED:
            waiting = Q(operation__status=OperationStatus.RUNNING, **{f"{cls.STARTED}__isnull": True})
            whens.append(When(waiting, then=Value(RunStatus.QUEUED)))
        return Case(*whens, default=F("operation__status"), output_field=models.CharField())
