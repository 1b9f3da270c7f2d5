"""Tarn's database in and out of a backup, without an unsealed copy on disk.

Out: SQLite's online backup API copies the live database, consistently, into an in-memory database, which is
trimmed (sessions, login counters, the pads of queued secrets, key exports; the analytics series unless asked for)
and serialized to bytes. In: the bytes are loaded into an in-memory database under a second connection alias, which
Django migrates forward (an older backup) and reads (the dry run's diff); applying a restore copies that database
over the live one with the same backup API, in one step, so a failure anywhere before leaves the live state as it
was. A backup made by a newer Tarn (a migration this code does not know) is refused.

What a restore brings is what the dry run shows: the database's schema must be exactly the one this Tarn's
migrations make (every table, index, trigger and view, by name and SQL, compared with an empty database migrated in
memory), so no trigger or view rides along; the tables that decide who signs in and what runs on its own (users,
tokens, factors, the two-factor policy, beat's periodic tasks) are shown row by row, with their values. Migrations
run with the copy as this thread's default database, so a data migration that forgets .using() reads and writes the
copy, never the live database."""

import sqlite3
from collections import defaultdict
from contextlib import contextmanager
from functools import cache

from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.loader import MigrationLoader
from django.db.utils import load_backend
from django.utils.text import capfirst

from appliance.apps import product_apps

ALIAS = "tarn_restore"
REFERENCE = "tarn_schema"
# Left out of every backup: sessions, login counters, the pads of queued secrets, key exports (each an admin's file
# to download once, not configuration).
DROPPED = ("django_session", "appliance_loginattempts", "appliance_operationsecret", "encryption_keyexport")
SERIES = ("analytics_sample",)
STATISTICS = ("sqlite_stat1", "sqlite_stat4")  # ANALYZE's; the planner's hints, not Tarn's schema

# Who signs in, with what, what runs on its own, and whom later backups are sealed to: every row added, changed or
# removed is named, with its values (secrets by field name only).
SECURITY = (
    "appliance.User",
    "appliance.ApiToken",
    "appliance.TotpDevice",
    "appliance.Passkey",
    "appliance.RecoveryCode",
    "appliance.TwoFactorPolicy",
    "django_celery_beat.PeriodicTask",
    "django_celery_beat.CrontabSchedule",
    "django_celery_beat.IntervalSchedule",
    "django_celery_beat.ClockedSchedule",
    "django_celery_beat.SolarSchedule",
    "backups.BackupSchedule",
)
SECRET_FIELDS = {"password", "sealed_secret", "code_hash", "key_hash", "public_key", "credential_id", "wrapped_key"}
SECURITY_MAX = 5000  # rows of one security table a dry run names; a backup that changes more is not restored
# What the dry run names row by row (the configuration an admin made); every other table is counted.
CONFIGURATION = (
    "appliance.Host",
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
    "encryption.RetiredKey",  # an old key kept after change-key: a restore must not bring one back unseen
)
# Fields that move on their own (inventory, counters, clocks): a difference there is not a change an admin made.
VOLATILE = {"facts", "facts_error", "observed_at", "last_login", "last_used_at", "heartbeat_at", "seen_at"}
VOLATILE |= {"last_step", "sign_count", "last_run_at", "total_run_count", "date_changed"}
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
            if _has_table(copy, table):
                copy.execute(f'DELETE FROM "{table}"')  # noqa: S608 - names from the constants above
        _drop_statistics(copy)
        copy.commit()
        copy.execute("VACUUM")
        return copy.serialize()
    finally:
        copy.close()


def _has_table(db, table: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is not None


def _drop_statistics(db) -> None:
    for table in STATISTICS:
        if _has_table(db, table):
            db.execute(f"DROP TABLE {table}")


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
def _in_memory(alias: str, data: bytes | None = None):
    """An in-memory database under a connection alias of this thread only (not in settings.DATABASES), loaded from
    data when given; closed and forgotten on the way out."""
    live = connections[DEFAULT_DB_ALIAS]
    backend = load_backend(live.settings_dict["ENGINE"])
    connection = backend.DatabaseWrapper({**live.settings_dict, "NAME": ":memory:", "CONN_MAX_AGE": 0}, alias)
    connections[alias] = connection
    try:
        connection.ensure_connection()
        if hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE"):  # no writable_schema tricks on a file someone handed us
            connection.connection.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)
        if data is not None:
            try:
                connection.connection.deserialize(data)
                checked = connection.connection.execute("PRAGMA quick_check").fetchone()
            except sqlite3.DatabaseError as exc:
                raise DatabaseError(f"The backup's database cannot be read ({exc}).") from None
            if checked != ("ok",):
                raise DatabaseError(f"The backup's database is damaged ({str(checked[0])[:200]}).")
            _drop_statistics(connection.connection)
        yield alias
    finally:
        if connection.connection is not None:
            connection.connection.close()  # Django keeps in-memory databases open on close(); this one must go
            connection.connection = None
        del connections[alias]


@contextmanager
def opened(data: bytes):
    """The backup's database, loaded in memory under the connection alias ALIAS, checked: no trigger, view or virtual
    table this Tarn does not make, before anything runs on it (use checked() to migrate and check the rest)."""
    with _in_memory(ALIAS, data):
        extra = [o for o in _objects(ALIAS).items() if _is_code(o) and o not in reference_schema().items()]
        if extra:
            raise DatabaseError(_refusal("holds", extra))
        yield ALIAS


@contextmanager
def checked(data: bytes):
    """opened(), migrated to this code's migrations, and refused unless its schema is then exactly the one they make.
    Yields (ALIAS, the migrations run)."""
    with opened(data) as alias:
        pending = migrate()
        ours = reference_schema()
        theirs = _objects(alias)
        extra = [o for o in theirs.items() if o not in ours.items()]
        if extra:
            raise DatabaseError(_refusal("holds", extra))
        missing = [o for o in ours.items() if o[0] not in theirs]
        if missing:
            raise DatabaseError(_refusal("lacks", missing))
        dangling = connections[alias].connection.execute("PRAGMA foreign_key_check").fetchone()
        if dangling:
            raise DatabaseError(f"Refused: the backup's database has a row of {dangling[0]} that points nowhere.")
        yield alias, pending


def migrate() -> list[str]:
    """Run this code's migrations on the opened backup; a failure raises DatabaseError (the live state untouched)."""
    pending = missing_migrations(_state(ALIAS))
    if pending:
        try:
            with _as_default(ALIAS):
                call_command("migrate", database=ALIAS, interactive=False, verbosity=0, skip_checks=True)
        except Exception as exc:  # any failure of any migration: say which state, keep the live one
            raise DatabaseError(
                f"The backup's database failed a migration ({type(exc).__name__}: {str(exc)[:200]}); nothing was "
                "restored."
            ) from None
    return pending


@contextmanager
def _as_default(alias: str):
    """alias is this thread's default database meanwhile: code that forgets .using() (a data migration, a
    post_migrate handler) reaches the copy, not the live database. Caches keyed by "default" are emptied after."""
    live = connections[DEFAULT_DB_ALIAS]
    connections[DEFAULT_DB_ALIAS] = connections[alias]
    try:
        yield
    finally:
        connections[DEFAULT_DB_ALIAS] = live
        ContentType.objects.clear_cache()


@cache
def reference_schema() -> dict[tuple[str, str], tuple[str, str]]:
    """What this code's migrations make, read from an empty database migrated in memory (once per process)."""
    with _in_memory(REFERENCE) as alias, _as_default(alias):
        call_command("migrate", database=alias, interactive=False, verbosity=0, skip_checks=True)
        return _objects(alias)


def _objects(alias: str) -> dict[tuple[str, str], tuple[str, str]]:
    """sqlite_master as {(type, name): (table, SQL with its white space made single)}."""
    rows = connections[alias].connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {(kind, name): (table, " ".join((sql or "").split())) for kind, name, table, sql in rows}


def _is_code(item) -> bool:
    """A trigger, a view or a virtual table: something that runs or reads on its own, which no migration removes."""
    (kind, _), (_, sql) = item
    return kind in ("trigger", "view") or sql.upper().startswith("CREATE VIRTUAL TABLE")


def _refusal(verb: str, items) -> str:
    shown = "; ".join(f"{kind} {name[:60]}" for (kind, name), _ in sorted(items)[:5])
    more = f" and {len(items) - 5} more" if len(items) > 5 else ""
    what = "this Tarn's migrations do not make" if verb == "holds" else "this Tarn's migrations make"
    return (
        f"Refused: the backup's database {verb} what {what} ({shown}{more}); a restore brings only what the dry run "
        "shows, so it is not used."
    )


def _state(alias: str) -> dict[str, list[str]]:
    found = defaultdict(list)
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT app, name FROM django_migrations")
        for app, name in cursor.fetchall():
            found[app].append(name)
    return dict(found)


def diff() -> dict:
    """What a restore of the opened backup would change: for the security tables, every row added, changed or removed,
    with its values; for the configuration, each row (the first SHOWN of each kind), with the fields that change;
    for every other table, the counts. Security first: that is where a crafted backup would hide what it brings."""
    security, sections, counts = [], [], []
    for model in apps.get_models():
        label = model._meta.label
        if model._meta.app_label not in TARN_APPS:
            continue
        if label in SECURITY:
            security.append(_section(model, shown=SECURITY_MAX, values=True))
        elif label in CONFIGURATION:
            sections.append(_section(model, shown=SHOWN, values=False))
        else:
            before, after = model.objects.using(DEFAULT_DB_ALIAS).count(), model.objects.using(ALIAS).count()
            if before or after:
                counts.append({"model": _title(model), "now": before, "backup": after})
    return {"sections": [*security, *sections], "counts": counts}


def _section(model, *, shown: int, values: bool) -> dict:
    """One model's rows, live and in the backup, by primary key. values: name every row and what its fields become
    (secrets by field name only), and refuse a backup that changes more rows than can be shown."""
    now, then = model.objects.using(DEFAULT_DB_ALIAS), model.objects.using(ALIAS)
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
    section = {"model": _title(model), "security": values, "added": [], "removed": [], "changed": []}
    section["same"] = len(current) - len(removed) - len(changed)
    if not (added or removed or changed):
        return section
    if values and max(len(added), len(removed), len(changed)) > shown:
        raise DatabaseError(
            f"Refused: the backup changes more {_title(model)} than a dry run can show ({shown}); a restore brings "
            "only what the dry run shows, so it is not used."
        )
    names_then = _names(then, added[:shown] + [pk for pk, _ in changed][:shown], numbered=values)
    names_now = _names(now, removed[:shown], numbered=values)
    section |= {"added_count": len(added), "removed_count": len(removed), "changed_count": len(changed)}
    if values:
        section["added"] = [f"{names_then[pk]} ({_values(restored[pk])})" for pk in added]
        section["removed"] = [f"{names_now[pk]} ({_values(current[pk])})" for pk in removed]
        section["changed"] = [
            {"name": names_then[pk], "fields": fs, "values": [_change(f, current[pk][f], restored[pk][f]) for f in fs]}
            for pk, fs in changed
        ]
    else:
        section["added"] = [names_then[pk] for pk in added[:shown]]
        section["removed"] = [names_now[pk] for pk in removed[:shown]]
        section["changed"] = [{"name": names_then[pk], "fields": fs} for pk, fs in changed[:shown]]
    return section


def _names(rows, pks: list, *, numbered: bool) -> dict:
    """Each row's name as its page shows it (its str; numbered: after its id), or #id when that cannot be made (a
    crafted row pointing nowhere)."""
    names = {pk: f"#{pk}" for pk in pks}
    for row in rows.filter(pk__in=pks):
        try:
            names[row.pk] = f"#{row.pk} {row}" if numbered else str(row)
        except Exception:  # noqa: BLE001, S110 - a row that points nowhere keeps its id as its name
            pass
    return names


def _shown(field: str, value) -> str:
    if field in SECRET_FIELDS:
        return "(secret)"
    text = repr(value) if isinstance(value, str | list | dict) else str(value)
    return text if len(text) <= 80 else text[:77] + "…"


def _values(row: dict) -> str:
    return ", ".join(f"{k}={_shown(k, v)}" for k, v in row.items() if k != "pk" and v not in (None, "", [], {}))


def _change(field: str, before, after) -> str:
    if field in SECRET_FIELDS:
        return f"{field} (changed)"
    return f"{field}: {_shown(field, before)} → {_shown(field, after)}"


TARN_APPS = {*product_apps(), "django_celery_beat"}  # beat's periodic tasks are Tarn's schedules too


def _title(model) -> str:
    """A table in words, as its model's Meta names it ("SMB shares (shares)"): capfirst keeps "SMB" and "API"."""
    return capfirst(str(model._meta.verbose_name_plural)) + f" ({model._meta.app_label})"


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
