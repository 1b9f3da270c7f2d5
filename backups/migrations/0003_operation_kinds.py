"""Operation kinds carry their app's label (backups.*, as every app's do): rename the rows made as config.*. A
backup's own database is migrated forward when it is checked or restored, so its rows are renamed too."""

from django.db import migrations

RENAMED = {f"config.{verb}": f"backups.{verb}" for verb in ("backup", "check", "restore", "delete")}


def rename(apps, mapping):
    operations = apps.get_model("appliance", "Operation")
    for old, new in mapping.items():
        operations.objects.filter(kind=old).update(kind=new)


class Migration(migrations.Migration):
    dependencies = [
        ("appliance", "0010_verbose_names"),
        ("backups", "0002_weekday_by_name"),
    ]

    operations = [
        migrations.RunPython(
            lambda apps, _: rename(apps, RENAMED),
            lambda apps, _: rename(apps, {new: old for old, new in RENAMED.items()}),
        ),
    ]
