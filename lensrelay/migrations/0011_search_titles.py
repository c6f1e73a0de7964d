# The titles alone in an FTS5 table of their own (SQLite only), kept by triggers on the index rows: the
# title tier of a search (lensrelay/search/sqlite.py) ranks short title doclists instead of ranking the
# whole index for a word in nearly every note.

from typing import Any

from django.db import migrations

TITLES = "lensrelay_search_title"

SQLITE = [
    f"CREATE VIRTUAL TABLE {TITLES} USING fts5(title, tokenize = 'unicode61 remove_diacritics 2')",
    f"INSERT INTO {TITLES} (rowid, title) SELECT id, title FROM lensrelay_search_doc",
    f"CREATE TRIGGER {TITLES}_insert AFTER INSERT ON lensrelay_search_doc"
    f" BEGIN INSERT INTO {TITLES} (rowid, title) VALUES (NEW.id, NEW.title); END",
    f"CREATE TRIGGER {TITLES}_delete AFTER DELETE ON lensrelay_search_doc"
    f" BEGIN DELETE FROM {TITLES} WHERE rowid = OLD.id; END",
    f"CREATE TRIGGER {TITLES}_update AFTER UPDATE OF id, title ON lensrelay_search_doc"
    f" WHEN OLD.id IS NOT NEW.id OR OLD.title IS NOT NEW.title"
    f" BEGIN DELETE FROM {TITLES} WHERE rowid = OLD.id;"
    f" INSERT INTO {TITLES} (rowid, title) VALUES (NEW.id, NEW.title); END",
]
SQLITE_REVERSE = [
    f"DROP TRIGGER {TITLES}_insert",
    f"DROP TRIGGER {TITLES}_delete",
    f"DROP TRIGGER {TITLES}_update",
    f"DROP TABLE {TITLES}",
]


def _run(statements: list[str]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("lensrelay", "0010_search_generation"),
    ]

    operations = [migrations.RunPython(_run(SQLITE), _run(SQLITE_REVERSE))]
