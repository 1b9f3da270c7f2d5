"""Operation kinds carry their app's label: samba.user.* becomes shares.samba_user_*."""

from django.db import migrations

from appliance.kinds import kinds_renamed

RENAMED = {
    f"samba.user.{verb}": f"shares.samba_user_{verb}" for verb in ("add", "password", "enable", "disable", "delete")
}


class Migration(migrations.Migration):
    dependencies = [
        ("appliance", "0010_verbose_names"),
        ("shares", "0003_verbose_names"),
    ]

    operations = [kinds_renamed(RENAMED)]
