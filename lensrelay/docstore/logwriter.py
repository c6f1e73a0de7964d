"""The update log's own writer thread: every live change is appended here before anyone sees it.

Persisting sits on every update's path to the other clients, so it must cost little and never wait behind
other database work. The store's general database thread also runs the periodic reads (catch-up, access
and suggestion checks) that can take milliseconds; an append queued behind them would wait that long.
Here appends have a thread and a connection of their own, and whatever has queued up while one commit was
in flight is written in the next single transaction (a group commit): one commit per burst, not per update.

Results come back to the event loop with one `call_soon_threadsafe` per batch.

On SQLite an append that finds the database free is written on the event loop itself, by a connection
that never waits for the lock (`LoopAppender`): an INSERT in WAL mode with synchronous=NORMAL takes tens of
microseconds, less than the two thread switches of the hop. If the database is busy (a compaction, an
import in another process, the writer thread mid-commit) it goes to the thread as before.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.db import OperationalError, connections
from django.utils import timezone

from lensrelay.docstore import persistence
from lensrelay.docstore.logfirst import exempt_this_thread, log_appends_queued, log_appends_written
from lensrelay.docstore.loopsqlite import sqlite_file
from lensrelay.models import YUpdate

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Appends written in one transaction at most; a longer queue goes out in several.
MAX_BATCH = 256
# SQLite's primary result codes for a database another connection is writing.
SQLITE_BUSY = 5
SQLITE_LOCKED = 6


# On SQLite the writer thread does not wait for the lock in SQLite's busy handler, whose sleeps grow 1, 2,
# 5, 10 ms and on: a lock the derive process held for 3 ms cost an append 8, and that was the live path's
# tail beside it (issue 36). It asks again after a short sleep, growing to BUSY_RETRY_MAX, for as long as
# the busy timeout the rest of the process uses (settings.DATABASES' "timeout").
BUSY_RETRY_FIRST = 0.0001
BUSY_RETRY_MAX = 0.001


def retrying_while_locked(write: Callable[[], T]) -> T:
    connection = connections["default"]
    if connection.vendor != "sqlite":
        return write()
    connection.ensure_connection()
    connection.connection.execute("PRAGMA busy_timeout = 0")  # a few microseconds; the connection may be new
    deadline = time.monotonic() + float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 5))
    pause = BUSY_RETRY_FIRST
    while True:
        try:
            return write()
        except OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(BUSY_RETRY_MAX, pause * 2)


@dataclass(frozen=True)
class _Append:
    doc_id: str
    update: bytes
    author: str
    future: asyncio.Future[int]


class LoopAppender:
    """Appends on the event loop to a SQLite database file, only when that needs no waiting."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._sql = (
            f'INSERT INTO "{YUpdate._meta.db_table}" ("doc_id", "data", "writer", "author", "created") '
            "VALUES (?, ?, ?, ?, ?)"
        )

    @classmethod
    def for_default_database(cls) -> LoopAppender | None:
        name = sqlite_file()
        return None if name is None else cls(name)

    def append(self, doc_id: str, update: bytes, writer: str, author: str = "") -> int | None:
        """The new row's id, or None if the database was busy or failed (the caller uses the thread)."""
        try:
            if self._connection is None:
                # Autocommit: the INSERT is its own transaction, committed when it returns. No busy
                # timeout: a locked database answers at once and the append goes to the thread.
                self._connection = sqlite3.connect(
                    self.path, timeout=0, isolation_level=None, check_same_thread=False
                )
                self._connection.execute("PRAGMA synchronous=NORMAL")
                # A commit that crosses the WAL's checkpoint size copies the log into the database and
                # syncs it, 100 ms and more under load, stalling every delivery: the other connections,
                # which commit from threads, checkpoint instead.
                self._connection.execute("PRAGMA wal_autocheckpoint=0")
            created = str(timezone.now().replace(tzinfo=None))  # naive UTC, as Django stores it
            cursor = self._connection.execute(self._sql, (doc_id, update, writer, author[:200], created))
            return cursor.lastrowid
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in (SQLITE_BUSY, SQLITE_LOCKED):
                logger.debug("appending on the loop failed; the writer thread takes over", exc_info=True)
                self.close()  # reconnect next time
            return None

    def close(self) -> None:
        if self._connection is not None:
            connection, self._connection = self._connection, None
            try:
                connection.close()
            except sqlite3.Error:
                logger.debug("closing the loop's log connection failed", exc_info=True)


class LogWriter:
    """Appends to the update log on a dedicated thread, in order, batching what queues up meanwhile."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        writer: str,
        prepare: Callable[[], None],
        on_loop: LoopAppender | None = None,
    ) -> None:
        self.loop = loop
        self.writer = writer
        self._on_loop = on_loop
        # Run before each batch on the writer thread: keeps its connection, replaces it after a failure.
        self._prepare = prepare
        self._queue: queue.SimpleQueue[_Append | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False

    def append(self, doc_id: str, update: bytes, *, author: str = "") -> asyncio.Future[int]:
        """Queue one update; the future gives its log id once committed, or the database's error."""
        if self._closed:
            raise RuntimeError("the update log writer is closed")
        future: asyncio.Future[int] = self.loop.create_future()
        if self._on_loop is not None and self._queue.empty():
            row_id = self._on_loop.append(doc_id, update, self.writer, author)
            if row_id is not None:
                future.set_result(row_id)
                return future
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="lensrelay-log", daemon=True)
            self._thread.start()
        log_appends_queued()  # this process's other writers let it go first (docstore.logfirst)
        self._queue.put(_Append(doc_id, update, author, future))
        return future

    def close(self) -> None:
        """Write what is queued, then stop the thread and close its connection."""
        self._closed = True
        if self._on_loop is not None:
            self._on_loop.close()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        exempt_this_thread()
        try:
            while (first := self._queue.get()) is not None:
                batch = [first]
                stop = False
                while len(batch) < MAX_BATCH:
                    try:
                        entry = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if entry is None:
                        stop = True
                        break
                    batch.append(entry)
                try:
                    self._write(batch)
                finally:
                    log_appends_written(len(batch))
                if stop:
                    break
        finally:
            connections.close_all()

    def _write(self, batch: list[_Append]) -> None:
        try:
            self._prepare()
            ids = retrying_while_locked(
                lambda: persistence.append_updates(
                    [(entry.doc_id, entry.update, False, entry.author) for entry in batch],
                    writer=self.writer,
                )
            )
        except Exception as exc:
            if len(batch) == 1:
                self._resolve(batch, None, exc)
                return
            # One bad entry must not fail the others, batch after batch: write them one by one.
            for entry in batch:
                self._write([entry])
        else:
            self._resolve(batch, ids, None)

    def _resolve(self, batch: list[_Append], ids: list[int] | None, error: Exception | None) -> None:
        def settle() -> None:
            for n, entry in enumerate(batch):
                if entry.future.done():
                    continue
                if error is not None:
                    entry.future.set_exception(error)
                else:
                    assert ids is not None
                    entry.future.set_result(ids[n])

        try:
            self.loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            logger.debug("update log results dropped: the event loop is closed")
