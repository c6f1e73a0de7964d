"""A connection of the calling thread's own to Django's SQLite file: autocommit, never waiting for a lock.

Hot paths on the event loop (the MCP credential counter and read marks, the sync connect lookups) answer
from the loop's thread in tens of microseconds instead of a trip to Django's database thread. In WAL mode
a reader never waits for a writer; a statement that finds the file locked fails at once (timeout 0), and
the caller takes its trip instead. There is no such connection for other databases or an in-memory SQLite
database, which only Django's own connection can see.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading

from django.conf import settings

# The durability of Django's own SQLite connections (their init_command in settings.py). SQLite's default
# (FULL) fsyncs the log on every commit: ~10 ms with the event loop blocked.
SYNCHRONOUS = "NORMAL"


def sqlite_file() -> str | None:
    """The path of the SQLite file Django's default database uses (the test database's while tests run);
    None for other databases and for an in-memory SQLite database, which only Django's own connection
    can see."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.sqlite3":
        return None
    name = str(database.get("NAME") or "")
    return None if not name or name.startswith("file:") or ":memory:" in name else name


class ThreadSqlite:
    def __init__(self) -> None:
        self._local = threading.local()

    def connection(self) -> sqlite3.Connection | None:
        name = sqlite_file()
        kept: tuple[str, sqlite3.Connection] | None = getattr(self._local, "kept", None)
        if kept is not None and kept[0] == name:
            return kept[1]
        self.drop()
        if name is None:
            return None
        # mode=rw: never create the file; timeout 0: a held lock is an error here, not a wait.
        opened = sqlite3.connect(f"file:{name}?mode=rw", uri=True, timeout=0, isolation_level=None)
        opened.execute(
            "PRAGMA wal_autocheckpoint=0"
        )  # checkpoints (an fsync) are left to Django's connections
        opened.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
        self._local.kept = (name, opened)
        return opened

    def drop(self) -> None:
        """Close this thread's connection (after an error); the next call opens a new one."""
        kept: tuple[str, sqlite3.Connection] | None = getattr(self._local, "kept", None)
        self._local.kept = None
        if kept is not None:
            with contextlib.suppress(sqlite3.Error):
                kept[1].close()
