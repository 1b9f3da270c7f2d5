"""Operation kinds carry their app's label: benchmark.* becomes benchmarks.*."""

from django.db import migrations

from appliance.kinds import kinds_renamed

RENAMED = {f"benchmark.{verb}": f"benchmarks.{verb}" for verb in ("run", "suite", "cleanup", "network")}


class Migration(migrations.Migration):
    dependencies = [
        ("appliance", "0010_verbose_names"),
        ("benchmarks", "0004_custom_profiles"),
    ]

    operations = [kinds_renamed(RENAMED)]
