"""Issue 27 figures: a configuration backup and its restore for a typical install — 10 hosts, 1,000 datasets,
100 SMB shares, a year of audit (500,000 entries, one a minute) and 50,000 operations. Goal: restore <= 60 s.

Made, checked (the dry run: open, migrate in memory, diff) and restored through backups.services, in this process
(the worker's code without a worker). Side by side: the same database copied with SQLite's backup API alone (what any
restore must at least do), so the ratio says what sealing, checking and keeping the state before cost on top."""

import sqlite3
import time

HOSTS, DATASETS, SHARES, ENTRIES, OPERATIONS = 10, 1000, 100, 500_000, 50_000
PASSPHRASE = "perf-passphrase-issue-27"  # not a secret: the perf data dir is thrown away


def _fill():
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from appliance.models import AuditEntry, Host, Operation
    from pools.models import Dataset, Pool
    from shares.models import SmbShare

    call_command("migrate", verbosity=0)
    if Host.objects.filter(name="nas0").exists():
        return
    now = timezone.now()
    hosts = [Host.objects.create(name=f"nas{i}", address=f"10.0.0.{i + 10}") for i in range(HOSTS)]
    for h, host in enumerate(hosts):
        pool = Pool.objects.create(host=host, name="tank", guid=str(h), state="ONLINE", observed_at=now)
        Dataset.objects.bulk_create(
            Dataset(host=host, pool=pool, name=f"tank/d{i}", type="filesystem", observed_at=now)
            for i in range(DATASETS // HOSTS)
        )
        SmbShare.objects.bulk_create(
            SmbShare(host=host, name=f"share{i}", dataset=f"tank/d{i}", path=f"/tank/d{i}")
            for i in range(SHARES // HOSTS)
        )
    Operation.objects.bulk_create(
        (
            Operation(kind="pools.snapshot_task", target=f"perf:{i}", host=hosts[i % HOSTS], status="succeeded")
            for i in range(OPERATIONS)
        ),
        batch_size=5000,
    )
    for first in range(0, ENTRIES, 20_000):
        AuditEntry.objects.bulk_create(
            AuditEntry(
                kind="command",
                username="tarn",
                host_name=f"nas{i % HOSTS}",
                exit_code=0,
                duration_ms=40,
                argv=["zfs", "snapshot", "--", f"tank/d{i % 100}@auto-{i}"],
            )
            for i in range(first, min(first + 20_000, ENTRIES))
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE appliance_auditentry SET at = strftime('%Y-%m-%d %H:%M:%f', 'now', "
            "'-' || ((SELECT MAX(id) FROM appliance_auditentry) - id) || ' minutes')"
        )


def backup_figures():
    _fill()
    from django.conf import settings
    from django.db import connection

    from appliance.models import Host
    from backups import archive, services
    from backups.choices import Origin

    started = time.monotonic()
    recipient, wrapped = archive.new_key(PASSPHRASE)
    backup = services.backup_make(origin=Origin.MANUAL, user=None, recipient=recipient, wrapped=wrapped, series=False)
    made = time.monotonic() - started
    yield "backup_make", made, "s", f"informational; file {backup.size / (1 << 20):.1f} MiB"

    started = time.monotonic()
    members = services.backup_open(services.path_of(backup).read_bytes(), PASSPHRASE)
    result = services.dry_run(members)
    checked = time.monotonic() - started
    hosts = next(s for s in result["sections"] if s["model"].startswith("Hosts"))
    yield "backup_dry_run", checked, "s", f"informational; {hosts['same']} hosts the same"

    Host.objects.filter(name="nas9").delete()  # something for the restore to bring back
    started = time.monotonic()
    members = services.backup_open(services.path_of(backup).read_bytes(), PASSPHRASE)
    services.backup_restore(
        members, passphrase=PASSPHRASE, op=None, source=backup.name, log=lambda line: None, accept=False
    )
    restored = time.monotonic() - started
    assert Host.objects.filter(name="nas9").exists()
    yield "backup_restore_typical_install", restored, "s", "goal <= 60 s (open, check, keep the state before, apply)"

    live = connection.connection
    copy = sqlite3.connect(settings.DATA_DIR / "perf-copy.sqlite3")
    started = time.monotonic()
    live.backup(copy)
    raw = time.monotonic() - started
    copy.close()
    yield "backup_raw_sqlite_copy", raw, "s", "informational; the same database, SQLite's backup API alone"
    yield "backup_restore_over_raw_copy", restored / raw, "x", "informational; what sealing and checking add"


CHECKS = [backup_figures]
