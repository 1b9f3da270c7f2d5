"""A run's status is read from its Operation (appliance.runs): the row keeps its own end (outcome) and when it began
(started_at) instead of a status column, and the beat entry that mended the column (runs_reconcile) goes."""

from django.db import migrations, models

ENDED = ("succeeded", "failed", "cancelled")
ACTIVE = ("queued", "running")


def own_ends(apps, schema_editor):
    """An ended run keeps its end; a running one has begun. A run left queued or running whose Operation ended
    needs nothing: it reads failed from it now."""
    runs = apps.get_model("benchmarks", "Run")
    for status in ENDED:
        runs.objects.filter(status=status).update(outcome=status)
    runs.objects.filter(status="running").update(started_at=models.F("created_at"))
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(task="benchmarks.tasks.runs_reconcile").delete()


def statuses(apps, schema_editor):
    """Back to a status column: what each run reads as now (the column's default is queued)."""
    runs = apps.get_model("benchmarks", "Run")
    for status in ENDED:
        runs.objects.filter(outcome=status).update(status=status)
    waiting = runs.objects.filter(outcome="")
    waiting.filter(operation__status="running", started_at__isnull=False).update(status="running")
    waiting.exclude(operation__status__in=ACTIVE).update(status="failed")


class Migration(migrations.Migration):
    dependencies = [
        ("benchmarks", "0005_operation_kinds"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[("succeeded", "Succeeded"), ("failed", "Failed"), ("cancelled", "Cancelled")],
                help_text="How the run itself ended (a suite's runs each end on their own); empty until then.",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="started_at",
            field=models.DateTimeField(blank=True, help_text="When its worker began it.", null=True),
        ),
        migrations.RunPython(own_ends, statuses),
        migrations.RemoveField(model_name="run", name="status"),
    ]
