"""manage.py tarn_backup [--output FILE] [--include-series]: back up Tarn's configuration now (as root: it reads the
secrets a backup holds). The passphrase is read from TARN_BACKUP_PASSPHRASE_FILE, else asked twice on the terminal."""

import getpass
import os
import shutil
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from backups import archive, services
from backups.choices import Origin


def passphrase(*, twice: bool) -> str:
    path = os.environ.get("TARN_BACKUP_PASSPHRASE_FILE")
    if path:
        return Path(path).read_text().rstrip("\n")
    first = getpass.getpass("Backup passphrase: ")
    if twice:
        try:
            services.check_passphrase(first, getpass.getpass("Again: "))
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
    return first


class Command(BaseCommand):
    help = "Back up Tarn's configuration (database, secrets, SSH key pair) into one sealed file."

    def add_arguments(self, parser):
        parser.add_argument("--output", help="Also copy the backup to this path.")
        parser.add_argument("--include-series", action="store_true", help="Keep the analytics series too.")

    def handle(self, *args, **options):
        secret = passphrase(twice=True)
        try:
            services.check_passphrase(secret)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        recipient, wrapped = archive.new_key(secret)
        backup = services.backup_make(
            origin=Origin.MANUAL, user=None, recipient=recipient, wrapped=wrapped, series=options["include_series"]
        )
        if options["output"]:
            shutil.copyfile(services.path_of(backup), options["output"])
        self.stdout.write(f"{services.path_of(backup)} ({backup.size} bytes, sha256 {backup.sha256})")
