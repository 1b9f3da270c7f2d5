"""A task run's status and end are its Operation's (appliance.runs): the row keeps only what it found (outcome:
nothing new, no snapshot to send, stopped), and its status and finished_at columns go."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery

FOUND = ("nothing", "empty", "stopped")


def outcomes(apps, schema_editor):
    runs = apps.get_model("replication", "TaskRun")
    for found in FOUND:
        runs.objects.filter(status=found).update(outcome=found)


def statuses(apps, schema_editor):
    """Back to the columns: what each run reads as now (the old words had no queued: running then)."""
    runs = apps.get_model("replication", "TaskRun")
    operations = apps.get_model("appliance", "Operation")
    op = operations.objects.filter(pk=OuterRef("operation_id"))
    runs.objects.update(finished_at=Subquery(op.values("finished_at")[:1]))
    for status in ("succeeded", "failed"):
        runs.objects.filter(outcome="", operation__status=status).update(status=status)
    runs.objects.filter(outcome="", operation__isnull=True).update(status="failed")
    for found in FOUND:
        runs.objects.filter(outcome=found).update(status=found)


class Migration(migrations.Migration):
    dependencies = [
        ("appliance", "0010_verbose_names"),
        ("replication", "0003_receive_only_quota_retention"),
    ]

    operations = [
        migrations.AddField(
            model_name="taskrun",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("nothing", "Nothing new"),
                    ("empty", "No snapshot to send"),
                    ("stopped", "Stopped (needs an admin)"),
                ],
                help_text="What the run found beyond its status: nothing new, no snapshot to send, stopped on a cause.",
                max_length=10,
            ),
        ),
        migrations.RunPython(outcomes, statuses),
        migrations.RemoveField(model_name="taskrun", name="status"),
        migrations.RemoveField(model_name="taskrun", name="finished_at"),
    ]
