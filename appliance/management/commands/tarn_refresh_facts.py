"""Read every host's facts now (make run does this at start so the first page is not empty)."""

from django.core.management.base import BaseCommand

from appliance.models import Host
from appliance.services import host_refresh_facts


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args, **options):
        for host in Host.objects.all():
            host_refresh_facts(host=host)
            state = host.facts.get("zfs_version") or host.facts_error or "no OpenZFS"
            self.stdout.write(f"{host.name}: {state}")
