"""Operation kinds carry their app's label: the core's host.probe becomes appliance.host_probe."""

from django.db import migrations

from appliance.kinds import kinds_renamed

RENAMED = {"host.probe": "appliance.host_probe"}


class Migration(migrations.Migration):
    dependencies = [("appliance", "0010_verbose_names")]

    operations = [kinds_renamed(RENAMED)]
