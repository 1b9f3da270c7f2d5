"""The local host exists from the start."""

from django.db import migrations


def create_local(apps, schema_editor):
    Host = apps.get_model("appliance", "Host")
    Host.objects.get_or_create(name="local", defaults={"transport": "local", "address": "localhost"})


class Migration(migrations.Migration):
    dependencies = [("appliance", "0001_initial")]
    operations = [migrations.RunPython(create_local, migrations.RunPython.noop)]
