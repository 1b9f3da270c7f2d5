"""A search index for the audit log's text search (path and argv): SQLite's FTS5 with the trigram tokenizer (a
substring match of three or more characters answered from the index), PostgreSQL's pg_trgm GIN indexes on the
same expressions Django's icontains compares. Kept by triggers (SQLite) or by the indexes themselves."""

from django.db import migrations

SQLITE = [
    "CREATE VIRTUAL TABLE appliance_audit_search USING fts5(text, content='', tokenize='trigram')",
    "INSERT INTO appliance_audit_search(rowid, text) "
    "SELECT id, coalesce(path, '') || ' ' || coalesce(argv, '') FROM appliance_auditentry",
    "CREATE TRIGGER appliance_audit_search_insert AFTER INSERT ON appliance_auditentry BEGIN "
    "INSERT INTO appliance_audit_search(rowid, text) VALUES (new.id, coalesce(new.path, '') || ' ' || "
    "coalesce(new.argv, '')); END",
    "CREATE TRIGGER appliance_audit_search_delete AFTER DELETE ON appliance_auditentry BEGIN "
    "INSERT INTO appliance_audit_search(appliance_audit_search, rowid, text) VALUES ('delete', old.id, "
    "coalesce(old.path, '') || ' ' || coalesce(old.argv, '')); END",
]
SQLITE_UNDO = [
    "DROP TRIGGER IF EXISTS appliance_audit_search_delete",
    "DROP TRIGGER IF EXISTS appliance_audit_search_insert",
    "DROP TABLE IF EXISTS appliance_audit_search",
]
POSTGRES = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS audit_path_trgm ON appliance_auditentry USING gin (UPPER(path::text) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS audit_argv_trgm ON appliance_auditentry USING gin (UPPER(argv::text) gin_trgm_ops)",
]
POSTGRES_UNDO = ["DROP INDEX IF EXISTS audit_argv_trgm", "DROP INDEX IF EXISTS audit_path_trgm"]


def _run(statements):
    def run(apps, schema_editor):
        vendor = schema_editor.connection.vendor
        for sql in statements.get(vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("appliance", "0006_audit_detail_and_keyset_indexes")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRES}),
            _run({"sqlite": SQLITE_UNDO, "postgresql": POSTGRES_UNDO}),
        )
    ]
