"""Make Tarn's SSH identity and its vault key if they are missing (run as root by make run, before the web starts unprivileged)."""

from django.core.management.base import BaseCommand

from appliance.connect import ssh_dir
from appliance.vault import ensure_identity as ensure_vault
from hostlib.keys import ensure_identity


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args, **options):
        ensure_vault()
        self.stdout.write(str(ensure_identity(ssh_dir()).with_suffix(".pub")))
