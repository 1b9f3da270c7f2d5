"""Operation kinds carry their app's label: config.* becomes backups.*."""

from django.db import migrations

from appliance.kinds import kinds_renamed

RENAMED = {f"config.{verb}": f"backups.{verb}" for verb in ("backup", "check", "restore", "delete")}


class Migration(migrations.Migration):
    dependencies = [
        ("appliance", "0010_verbose_names"),
        ("backups", "0002_weekday_by_name"),
    ]

    operations = [kinds_renamed(RENAMED)]
