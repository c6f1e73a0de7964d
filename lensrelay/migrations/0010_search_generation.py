# A counter that moves whenever a search answer may change (SQLite only): the index rows, and the paths,
# folders and folder names its answers join. Kept search answers compare it (lensrelay/search/sqlite.py)
# instead of every commit to the database, which a live-edited vault makes many times a second.

from typing import Any

from django.db import migrations

_BUMP = "UPDATE lensrelay_search_generation SET n = n + 1"

SQLITE = [
    "CREATE TABLE lensrelay_search_generation (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)",
    "INSERT INTO lensrelay_search_generation (id, n) VALUES (1, 0)",
    *(
        f"CREATE TRIGGER lensrelay_search_generation_{table}_{event.lower()} AFTER {event} ON {table}"
        f" BEGIN {_BUMP}; END"
        for table in ("lensrelay_search_doc", "lensrelay_document", "lensrelay_folder")
        for event in ("INSERT", "DELETE")
    ),
    # The index rows change together with their FTS rows; every update of one may change an answer.
    f"CREATE TRIGGER lensrelay_search_generation_lensrelay_search_doc_update AFTER UPDATE"
    f" ON lensrelay_search_doc BEGIN {_BUMP}; END",
    # Documents and folders: only what an answer shows or is scoped by (an edit moves `modified` alone).
    f"CREATE TRIGGER lensrelay_search_generation_lensrelay_document_update AFTER UPDATE"
    f" OF doc_id, path, folder_id ON lensrelay_document"
    f" WHEN OLD.doc_id IS NOT NEW.doc_id OR OLD.path IS NOT NEW.path OR OLD.folder_id IS NOT NEW.folder_id"
    f" BEGIN {_BUMP}; END",
    f"CREATE TRIGGER lensrelay_search_generation_lensrelay_folder_update AFTER UPDATE OF id, name"
    f" ON lensrelay_folder WHEN OLD.id IS NOT NEW.id OR OLD.name IS NOT NEW.name BEGIN {_BUMP}; END",
]
SQLITE_REVERSE = [
    *(
        f"DROP TRIGGER lensrelay_search_generation_{table}_{event}"
        for table in ("lensrelay_search_doc", "lensrelay_document", "lensrelay_folder")
        for event in ("insert", "delete", "update")
    ),
    "DROP TABLE lensrelay_search_generation",
]


def _run(statements: list[str]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("lensrelay", "0009_files"),
    ]

    operations = [migrations.RunPython(_run(SQLITE), _run(SQLITE_REVERSE))]
