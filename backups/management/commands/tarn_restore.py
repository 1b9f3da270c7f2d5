"""manage.py tarn_restore FILE [--dry-run] [--yes] [--made-elsewhere]: restore Tarn's configuration from a backup
file (as root, e.g. on a fresh machine before `make run`). Prints the dry run's diff first; without --yes, asks
before it restores. A backup this Tarn did not make (a fresh machine did not make any) is restored only once
"made elsewhere" is typed at the question, or with --made-elsewhere. The passphrase is read from
TARN_BACKUP_PASSPHRASE_FILE, else asked on the terminal."""

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from backups import services
from backups.choices import MADE_ELSEWHERE
from backups.management.commands.tarn_backup import passphrase


class Command(BaseCommand):
    help = "Restore Tarn's configuration from a backup file, after showing what it would change."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--dry-run", action="store_true", help="Only show what would change.")
        parser.add_argument("--yes", action="store_true", help="Restore without asking.")
        parser.add_argument(
            "--made-elsewhere", action="store_true", help="Accept a backup this Tarn did not make (with --yes)."
        )

    def handle(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file.")
        if path.stat().st_size > services.MAX_UPLOAD:
            raise CommandError(f"{path} is larger than a Tarn backup can be.")
        call_command("migrate", interactive=False, verbosity=0)  # a fresh machine has no tables yet
        secret = passphrase(twice=False)
        try:
            members = services.backup_open(path.read_bytes(), secret)
            result = services.dry_run(members)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(_report(result))
        if options["dry_run"]:
            self.stdout.write("Dry run: nothing was changed.")
            return
        accept = result["made_here"] or options["made_elsewhere"]
        if not options["yes"]:
            wanted = "yes" if result["made_here"] else MADE_ELSEWHERE
            accept = input(f"Restore it? Type {wanted}: ").strip() == wanted
            if not accept:
                raise CommandError("Not restored.")
        try:
            said = services.backup_restore(
                members, passphrase=secret, op=None, source=path.name, log=self.stdout.write, accept=accept
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(said)


def _report(result: dict) -> str:
    m = result["manifest"]
    lines = [f"Backup made {m.get('created_at')} by {m.get('created_by')} (Tarn {m.get('tarn_version')})"]
    lines.append(
        "Made by this Tarn (its signature checks out)."
        if result["made_here"]
        else f"Made elsewhere: this Tarn did not sign it (another machine, an older Tarn, or altered): to restore it, "
        f'type "{MADE_ELSEWHERE}" or give --made-elsewhere.'
    )
    if result["migrations"]:
        lines.append(f"Migrations to run on it: {len(result['migrations'])}")
    if result["secrets"]:
        lines.append(f"Replaces this install's: {', '.join(result['secrets'])}")
    for s in result["sections"]:
        if s["security"]:
            lines += [f"  {s['model']}: + {a}" for a in s["added"]]
            lines += [f"  {s['model']}: ~ {c['name']}: {'; '.join(c['values'])}" for c in s["changed"]]
            lines += [f"  {s['model']}: - {r}" for r in s["removed"]]
        elif s.get("added") or s.get("changed") or s.get("removed"):
            parts = [f"+{s['added_count']}", f"~{s['changed_count']}", f"-{s['removed_count']}"]
            names = ", ".join((s["added"] + [c["name"] for c in s["changed"]] + s["removed"])[:8])
            lines.append(f"  {s['model']}: {' '.join(parts)}  {names}")
    for c in result["counts"]:
        lines.append(f"  {c['model']}: {c['now']} now, {c['backup']} in the backup")
    return "\n".join(lines)
