"""Register (or update) the lab guest as the SSH host "lab", from the lab.env that lab/lab.sh writes."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from appliance.models import Host
from appliance.services import host_refresh_facts


def read_env(path: Path) -> dict:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("lab_env", type=Path)

    def handle(self, *args, lab_env: Path, **options):
        if not lab_env.exists():
            raise CommandError(f"{lab_env} does not exist: is the lab up (make lab)?")
        env = read_env(lab_env)
        host, created = Host.objects.update_or_create(
            name="lab",
            defaults={
                "transport": "ssh",
                "address": env["LAB_SSH_HOST"],
                "port": int(env["LAB_SSH_PORT"]),
                "username": "root",
                "identity_file": env["LAB_SSH_KEY"],
                "host_keys": env["LAB_HOST_KEY"],
            },
        )
        host_refresh_facts(host=host)
        state = f"OpenZFS {host.facts.get('zfs_version')}" if host.has_zfs else f"not reachable: {host.facts_error}"
        self.stdout.write(f"{'Added' if created else 'Updated'} host 'lab' ({state}).")
