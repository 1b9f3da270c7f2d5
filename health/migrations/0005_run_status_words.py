"""A self-test run's status in the core's run vocabulary (appliance.choices.RunStatus): done becomes succeeded."""

from django.db import migrations, models


def renamed(old: str, new: str):
    def rename(apps, schema_editor):
        apps.get_model("health", "SelfTestRun").objects.filter(status=old).update(status=new)

    return rename


class Migration(migrations.Migration):
    dependencies = [
        ("health", "0004_weekday_by_name"),
    ]

    operations = [
        migrations.AlterField(
            model_name="selftestrun",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("succeeded", "Succeeded"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                ],
                default="running",
                max_length=10,
            ),
        ),
        migrations.RunPython(renamed("done", "succeeded"), renamed("succeeded", "done")),
    ]
