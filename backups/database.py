"""Tarn's database in and out of a backup, without an unsealed copy on disk.

Out: SQLite's online backup API copies the live database, consistently, into an in-memory database, which is
trimmed (sessions, login counters, the pads of queued secrets; the analytics series unless asked for) and
serialized to bytes. In: the bytes are loaded into an in-memory database under a second connection alias, which
Django migrates forward (an older backup) and reads (the dry run's diff); applying a restore copies that database
over the live one with the same backup API, in one step, so a failure anywhere before leaves the live state as it
was. A backup made by a newer Tarn (a migration this code does not know) is refused."""

import sqlite3
from collections import defaultdict
from contextlib import contextmanager

from django.apps import apps
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.loader import MigrationLoader
from django.db.utils import load_backend

ALIAS = "tarn_restore"
DROPPED = ("django_session", "appliance_loginattempts", "appliance_operationsecret")
SERIES = ("analytics_sample",)

# What the dry run names row by row (the configuration an admin made); every other table is counted.
CONFIGURATION = (
    "appliance.User",
    "appliance.Host",
    "appliance.ApiToken",
    "shares.SmbShare",
    "shares.NfsExport",
    "shares.ShareSettings",
    "shares.SambaUser",
    "pools.SnapshotTask",
    "pools.ScrubSchedule",
    "replication.Pair",
    "replication.Task",
    "benchmarks.CustomProfile",
    "benchmarks.Suite",
    "benchmarks.Schedule",
    "analytics.Channel",
    "analytics.RuleSetting",
    "analytics.SamplerSetting",
    "tuning.ChangeSet",
    "health.SelfTestSchedule",
    "encryption.KeyEscrow",
    "backups.BackupSchedule",
)
# Fields that move on their own (inventory, counters, clocks): a difference there is not a change an admin made.
VOLATILE = {"facts", "facts_error", "observed_at", "last_login", "last_used_at", "heartbeat_at", "seen_at"}
SHOWN = 50


class DatabaseError(ValueError):
    """The database in a backup cannot be used here (another engine, a newer Tarn, a failed migration)."""


def _live():
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "sqlite":
        raise DatabaseError(
            "Configuration backups are built for Tarn's SQLite database; this install uses PostgreSQL: back it up "
            "with pg_dump (see the README)."
        )
    connection.ensure_connection()
    return connection.connection


def snapshot(*, include_series: bool) -> bytes:
    """The live database as bytes: a consistent copy, trimmed."""
    live = _live()
    copy = sqlite3.connect(":memory:")
    try:
        live.backup(copy)
        for table in DROPPED + (() if include_series else SERIES):
            if copy.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone():
                copy.execute(f'DELETE FROM "{table}"')  # noqa: S608 - names from the constants above
        copy.commit()
        copy.execute("VACUUM")
        return copy.serialize()
    finally:
        copy.close()


def applied(data: bytes) -> dict[str, list[str]]:
    """The migrations applied in a database given as bytes, by app."""
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(data)
        rows = db.execute("SELECT app, name FROM django_migrations").fetchall()
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"The backup's database cannot be read ({exc}).") from None
    finally:
        db.close()
    found = defaultdict(list)
    for app, name in rows:
        found[app].append(name)
    return {app: sorted(names) for app, names in sorted(found.items())}


def migration_state() -> dict[str, list[str]]:
    """What this install has applied (for the manifest)."""
    loader = MigrationLoader(connections[DEFAULT_DB_ALIAS], ignore_no_migrations=True)
    found = defaultdict(list)
    for app, name in loader.applied_migrations:
        found[app].append(name)
    return {app: sorted(names) for app, names in sorted(found.items())}


def unknown_migrations(state: dict[str, list[str]]) -> list[str]:
    """Migrations a backup has applied that this code does not have: it was made by a newer Tarn."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    known = set(loader.disk_migrations)
    return [f"{app}.{name}" for app, names in state.items() for name in names if (app, name) not in known]


def missing_migrations(state: dict[str, list[str]]) -> list[str]:
    """Migrations of this code a backup has not applied (they run on restore)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    have = {(app, name) for app, names in state.items() for name in names}
    return sorted(f"{app}.{name}" for app, name in loader.disk_migrations if (app, name) not in have)


@contextmanager
def opened(data: bytes):
    """The backup's database, loaded in memory under the connection alias ALIAS (and migrated by migrate())."""
    live = connections[DEFAULT_DB_ALIAS]
    backend = load_backend(live.settings_dict["ENGINE"])
    connection = backend.DatabaseWrapper({**live.settings_dict, "NAME": ":memory:", "CONN_MAX_AGE": 0}, ALIAS)
    connections[ALIAS] = connection  # a connection of this thread only, not in settings.DATABASES
    try:
        connection.ensure_connection()
        try:
            connection.connection.deserialize(data)
            connection.connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(f"The backup's database cannot be read ({exc}).") from None
        yield ALIAS
    finally:
        if connection.connection is not None:
            connection.connection.close()  # Django keeps in-memory databases open on close(); this one must go
            connection.connection = None
        del connections[ALIAS]


def migrate() -> list[str]:
    """Run this code's migrations on the opened backup; a failure raises DatabaseError (the live state untouched)."""
    pending = missing_migrations(_state(ALIAS))
    if pending:
        try:
            call_command("migrate", database=ALIAS, interactive=False, verbosity=0, skip_checks=True)
        except Exception as exc:  # any failure of any migration: say which state, keep the live one
            raise DatabaseError(
                f"The backup's database failed a migration ({type(exc).__name__}: {str(exc)[:200]}); nothing was "
                "restored."
            ) from None
    return pending


def _state(alias: str) -> dict[str, list[str]]:
    found = defaultdict(list)
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT app, name FROM django_migrations")
        for app, name in cursor.fetchall():
            found[app].append(name)
    return dict(found)


def diff() -> dict:
    """What a restore of the opened backup would change: for the configuration, each row added, changed (with the
    fields) or removed, by primary key; for every other table, the counts."""
    sections, counts = [], []
    for model in apps.get_models():
        label = model._meta.label
        if model._meta.app_label not in TARN_APPS:
            continue
        now, then = model.objects.using(DEFAULT_DB_ALIAS), model.objects.using(ALIAS)
        if label not in CONFIGURATION:
            before, after = now.count(), then.count()
            if before or after:
                counts.append({"model": _title(model), "now": before, "backup": after})
            continue
        fields = [
            f.attname
            for f in model._meta.concrete_fields
            if not f.primary_key and f.attname not in VOLATILE and not getattr(f, "auto_now", False)
        ]
        current = {row["pk"]: row for row in now.values("pk", *fields)}
        restored = {row["pk"]: row for row in then.values("pk", *fields)}
        added = sorted(set(restored) - set(current))
        removed = sorted(set(current) - set(restored))
        changed = [
            (pk, [f for f in fields if current[pk][f] != restored[pk][f]])
            for pk in sorted(set(current) & set(restored))
            if current[pk] != restored[pk]
        ]
        if not (added or removed or changed):
            sections.append({"model": _title(model), "added": [], "removed": [], "changed": [], "same": len(current)})
            continue
        names_then = {o.pk: str(o) for o in then.filter(pk__in=added + [pk for pk, _ in changed][:SHOWN])[: 2 * SHOWN]}
        names_now = {o.pk: str(o) for o in now.filter(pk__in=removed[:SHOWN])}
        sections.append(
            {
                "model": _title(model),
                "added": [names_then.get(pk, f"#{pk}") for pk in added[:SHOWN]],
                "added_count": len(added),
                "removed": [names_now.get(pk, f"#{pk}") for pk in removed[:SHOWN]],
                "removed_count": len(removed),
                "changed": [{"name": names_then.get(pk, f"#{pk}"), "fields": fs} for pk, fs in changed[:SHOWN]],
                "changed_count": len(changed),
                "same": len(current) - len(removed) - len(changed),
            }
        )
    return {"sections": sections, "counts": counts}


TARN_APPS = {"appliance", "pools", "shares", "tuning", "benchmarks", "analytics", "replication", "health", "encryption"}
TARN_APPS |= {"backups", "django_celery_beat"}


def _title(model) -> str:
    return str(model._meta.verbose_name_plural).capitalize() + f" ({model._meta.app_label})"


def keep_ids_ahead(tables) -> None:
    """In the opened backup, the next id of these tables is past the live one's (AUTOINCREMENT): a row written after
    the restore never takes the id of one the live database had (links, pages and logs that name it stay true)."""
    live = _live()
    restored = connections[ALIAS].connection
    for table in tables:
        row = live.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
        if row:
            restored.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (row[0], table))


def replace_live() -> None:
    """Copy the opened (migrated, prepared) backup over the live database in one step of SQLite's backup API: the
    other processes see the old state or the new one, never a mix."""
    live = _live()
    connections[ALIAS].connection.backup(live)
