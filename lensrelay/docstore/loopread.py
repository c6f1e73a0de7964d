"""A room's stored state read on the event loop when the database is a SQLite file.

Loading a room took two trips to the store's one database thread (the document's kind, then its state),
and on that thread they queue behind whatever periodic work is running (catch-up, access checks): on a
busy server a cold room's first sync waited for them. In WAL mode a reader never waits for a writer, and
reading one document's rows takes well under a millisecond, so here they are read on the loop, in one
snapshot, on a connection of the loop's own that never waits for a lock. The rows are merged exactly as
`persistence.load_state` merges them.

Whenever this way cannot answer (not SQLite, the file busy or failing) it answers None, and the store
takes the trips as before.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from dataclasses import dataclass

from lensrelay.docstore.loopsqlite import sqlite_file
from lensrelay.docstore.persistence import FeedOrigin, StoredState, stored_state
from lensrelay.models import YDoc, YSnapshot, YUpdate

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedRoom:
    kind: str | None  # None: no such document
    state: StoredState | None
    # The log's newest id and the ids committed below it, read with the state; None when not asked for
    # (only a store's first room needs it, to start following the log).
    origin: FeedOrigin | None


class LoopReader:
    def __init__(self, path: str, *, window: int) -> None:
        self.path = path
        self.window = window
        self._connection: sqlite3.Connection | None = None
        self._sql = {
            "kind": f'SELECT "kind" FROM "{YDoc._meta.db_table}" WHERE "doc_id" = ? LIMIT 1',
            "last": f'SELECT MAX("id") FROM "{YUpdate._meta.db_table}"',
            "rows": f'SELECT "id", "data" FROM "{YUpdate._meta.db_table}" WHERE "doc_id" = ? ORDER BY "id"',
            "snapshot": (
                f'SELECT "data", "upto_update_id" FROM "{YSnapshot._meta.db_table}" '
                'WHERE "doc_id" = ? LIMIT 1'
            ),
        }

    @classmethod
    def for_default_database(cls, *, window: int) -> LoopReader | None:
        name = sqlite_file()
        return None if name is None else cls(name, window=window)

    def room(self, doc_id: str, *, origin: bool = True) -> LoadedRoom | None:
        """The document's kind and stored state (and with `origin`, the log's origin in the same
        snapshot), or None if this way cannot answer now."""
        try:
            if self._connection is None:
                self._connection = sqlite3.connect(
                    f"file:{self.path}?mode=rw", uri=True, timeout=0, isolation_level=None
                )
                self._connection.execute("PRAGMA wal_autocheckpoint=0")  # left to Django's connections
            conn = self._connection
            conn.execute("BEGIN")  # one snapshot for every read below
            try:
                origin_read = self._origin(conn) if origin else None
                row = conn.execute(self._sql["kind"], (doc_id,)).fetchone()
                if row is None:
                    return LoadedRoom(kind=None, state=None, origin=origin_read)
                rows = conn.execute(self._sql["rows"], (doc_id,)).fetchall()
                snapshot = conn.execute(self._sql["snapshot"], (doc_id,)).fetchone()
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error:
            logger.debug(
                "reading %s on the loop failed; the database thread takes over", doc_id, exc_info=True
            )
            self.close()
            return None
        return LoadedRoom(
            kind=str(row[0]),
            state=stored_state(rows, (snapshot[0], int(snapshot[1])) if snapshot else None),
            origin=origin_read,
        )

    def _origin(self, conn: sqlite3.Connection) -> FeedOrigin:
        """What `persistence.feed_origin` reads, without listing the window's ids: through rows of ~2 KB
        that listing took 1-4 ms, on the first sync of a fresh server. In SQLite one writer commits at a
        time and the log's ids are AUTOINCREMENT, so in a snapshot whose newest id is `last` every id
        below it is committed or will never be used (rolled back, or folded by a compaction): every id of
        the window stands for a committed row or for none, and marking the latter handled changes
        nothing."""
        (last,) = conn.execute(self._sql["last"]).fetchone()
        last = int(last or 0)
        return FeedOrigin(
            last_update_id=last, committed=frozenset(range(max(1, last - self.window + 1), last + 1))
        )

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):
                connection.close()
