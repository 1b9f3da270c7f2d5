"""Issue 10 figures: the audit log and the operations list at the size a NAS reaches in a year or two of
snapshot schedules — 1,000,000 audit entries and 100,000 operations — with 50 clients each reloading about once
a second; a text search and a page deep in the past."""

import time

from tests.perf.foundation import admin_session_cookie, tarn_served, wrk

ENTRIES, OPERATIONS = 1_000_000, 100_000


def fill_history():
    from django.db import connection

    from appliance.models import AuditEntry, Host, Operation

    host = Host.objects.get(name="local")
    started = time.monotonic()
    if Operation.objects.count() < OPERATIONS:
        Operation.objects.bulk_create(
            [
                Operation(kind="pools.snapshot_task", target=f"perf:{i}", host=host, status="succeeded", message="Took")
                for i in range(OPERATIONS)
            ],
            batch_size=5000,
        )
    have = AuditEntry.objects.count()
    for first in range(have, ENTRIES, 20_000):
        AuditEntry.objects.bulk_create(
            [
                AuditEntry(
                    kind="command",
                    username="tarn",
                    host=host,
                    host_name="local",
                    exit_code=0,
                    duration_ms=40,
                    argv=["zfs", "snapshot", "--", f"tank/d{i % 997}@auto-{i}"],
                )
                if i % 2
                else AuditEntry(
                    kind="request",
                    username="admin",
                    method="POST",
                    path=f"/pools/datasets/{i % 997}/edit/",
                    status_code=302,
                    auth="session",
                    params={"compression": "zstd"},
                )
                for i in range(first, min(first + 20_000, ENTRIES))
            ],
        )
    # Spread the entries over the two years they stand for: one a minute, the newest now.
    table = AuditEntry._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f"UPDATE {table} SET at = strftime('%Y-%m-%d %H:%M:%f', 'now', "  # noqa: S608 - fixed names
                f"'-' || ((SELECT MAX(id) FROM {table}) - id) || ' minutes')"
            )
            cursor.execute("ANALYZE")
        else:
            cursor.execute(
                f"UPDATE {table} SET at = now() - ((SELECT MAX(id) FROM {table}) - id) * interval '1 minute'"
            )  # noqa: S608
    return time.monotonic() - started, AuditEntry.objects.order_by("id").values_list("id", flat=True)[5000 * 50]


def audit_figures():
    cookie = admin_session_cookie()
    seconds, deep = fill_history()
    yield "audit_fill", seconds, "s", f"{ENTRIES:,} audit entries and {OPERATIONS:,} operations (set-up)"
    pages = [
        ("audit_page_first", "/audit/"),
        ("operations_page_first", "/operations/"),
        ("audit_page_search", "/audit/?q=tank/d42@"),
        ("audit_page_deep", f"/audit/?before={deep}"),  # what ?page=5000 was
        ("audit_page_by_user", "/audit/?user=admin"),
        ("audit_api_first", "/api/v1/audit/"),
    ]
    with tarn_served() as base:
        for name, path in pages:
            p95, rate, errors = wrk(base + path, cookie, clients=50, pause_ms=1000, seconds=20)
            yield (
                f"{name}_p95",
                p95,
                "ms",
                f"goal <= 100 ms; 50 clients ~1 req/s each; {rate:.0f} req/s, {int(errors)} failed",
            )


CHECKS = [audit_figures]
