"""Webhooks post only to public addresses unless a channel allows private ones. A channel saved before with an IP
address that is not public typed into its URL (a receiver on the admin's own network, named explicitly) keeps
working: it is marked as allowing private addresses. A host *name* is not resolved here; it is checked at delivery."""

import ipaddress
from urllib.parse import urlsplit

from django.db import migrations, models


def allow_typed_private_addresses(apps, schema_editor):
    Channel = apps.get_model("analytics", "Channel")
    for channel in Channel.objects.filter(kind="webhook"):
        try:
            ip = ipaddress.ip_address(urlsplit(channel.url).hostname or "")
        except ValueError:
            continue
        if not ip.is_global:
            Channel.objects.filter(pk=channel.pk).update(allow_private=True)


class Migration(migrations.Migration):
    dependencies = [
        ("analytics", "0002_sampler_series"),
    ]

    operations = [
        migrations.AddField(
            model_name="channel",
            name="allow_private",
            field=models.BooleanField(
                default=False,
                help_text="Post to a private, loopback or link-local address (a receiver on your own network). "
                "Off: the URL's host must resolve to a public address.",
                verbose_name="Allow private addresses",
            ),
        ),
        migrations.AlterField(
            model_name="channel",
            name="secret",
            field=models.CharField(
                blank=True, help_text="Signs each timestamp and body: X-Tarn-Signature.", max_length=128
            ),
        ),
        migrations.RunPython(allow_typed_private_addresses, migrations.RunPython.noop),
    ]
