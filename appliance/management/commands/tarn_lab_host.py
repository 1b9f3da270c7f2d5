"""Register (or update) the lab guests as SSH hosts, from the lab.env files lab/lab.sh writes: the first as "lab",
a second (TARN_LAB=2 make run: the replication pair's other end) as "lab2"."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from appliance.models import Host
from appliance.services import host_refresh_facts


def read_env(path: Path) -> dict:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("lab_env", type=Path, nargs="+")

    def handle(self, *args, lab_env: list[Path], **options):
        for path in lab_env:
            if not path.exists():
                raise CommandError(f"{path} does not exist: is the lab up (make lab)?")
        for number, path in enumerate(lab_env, start=1):
            self.register("lab" if number == 1 else f"lab{number}", read_env(path))

    def register(self, name: str, env: dict) -> None:
        host, created = Host.objects.update_or_create(
            name=name,
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
        self.stdout.write(f"{'Added' if created else 'Updated'} host '{name}' ({state}).")
