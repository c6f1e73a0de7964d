# The full-text search index (lensrelay/search): an FTS5 table on SQLite, a tsvector table on PostgreSQL.
# Plain SQL, not models: neither shape maps onto a Django model, and the index is rebuilt from the
# documents at any time (`manage.py search_reindex`).

from typing import Any

from django.db import migrations


class VendorSQL(migrations.RunSQL):
    """RunSQL that runs only on one database vendor."""

    def __init__(self, vendor: str, sql: Any, reverse_sql: Any) -> None:
        super().__init__(sql, reverse_sql)
        self.vendor = vendor

    def database_forwards(self, app_label, schema_editor, from_state, to_state):  # type: ignore[no-untyped-def]
        if schema_editor.connection.vendor == self.vendor:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):  # type: ignore[no-untyped-def]
        if schema_editor.connection.vendor == self.vendor:
            super().database_backwards(app_label, schema_editor, from_state, to_state)


SQLITE = [
    """
    CREATE TABLE lensrelay_search_doc (
        id INTEGER PRIMARY KEY,
        doc_id VARCHAR(100) NOT NULL UNIQUE,
        folder_id INTEGER NOT NULL,
        path TEXT NOT NULL,
        title TEXT NOT NULL,
        modified REAL NOT NULL DEFAULT 0
    )
    """,
    "CREATE INDEX lensrelay_search_doc_folder ON lensrelay_search_doc (folder_id)",
    """
    CREATE VIRTUAL TABLE lensrelay_search_fts USING fts5(
        title, meta, body, tokenize = 'unicode61 remove_diacritics 2'
    )
    """,
]
SQLITE_REVERSE = ["DROP TABLE lensrelay_search_fts", "DROP TABLE lensrelay_search_doc"]

POSTGRES = [
    """
    CREATE TABLE lensrelay_search (
        doc_id VARCHAR(100) PRIMARY KEY,
        folder_id BIGINT NOT NULL,
        path TEXT NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        modified DOUBLE PRECISION NOT NULL DEFAULT 0,
        document TSVECTOR NOT NULL
    )
    """,
    "CREATE INDEX lensrelay_search_document ON lensrelay_search USING GIN (document)",
    "CREATE INDEX lensrelay_search_folder ON lensrelay_search (folder_id)",
]
POSTGRES_REVERSE = ["DROP TABLE lensrelay_search"]


class Migration(migrations.Migration):
    dependencies = [
        ("lensrelay", "0001_initial"),
    ]

    operations = [
        VendorSQL("sqlite", SQLITE, SQLITE_REVERSE),
        VendorSQL("postgresql", POSTGRES, POSTGRES_REVERSE),
    ]
