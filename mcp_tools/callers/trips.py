"""The two statements most `/mcp` requests make, coalesced into one trip to Django's sync thread.

Every request reads the credential counter (`memory.refresh`) and every `read` of a new document writes a
read mark. One trip each cost a thread hop, an ORM query build and, for the mark, a commit; with 20
sessions calling at once the hops queued behind each other on the one sync thread (bench/RESULTS.md,
"MCP calls against the SDK server"). Here whatever is asked while a trip runs waits and goes together in
the next one: one counter read answers every request that arrived before that trip started (so each
still sees every change committed before it arrived: revocation stays immediate), and the marks are
written in one transaction that commits before any of their `read`s is answered (so an edit on another
worker finds them). Plain SQL, built once: the statements are fixed, and building them through the ORM
was most of their cost.

On SQLite there is a shorter way still: the same two statements run on the event loop's own thread
through a connection of its own that never waits for a lock. In WAL mode a one-row read or upsert takes
tens of microseconds, far less than a hop to another thread and back, which on a busy machine costs two
scheduler wake-ups. Whenever that connection cannot answer at once (a writer holds the lock, the file
is not there yet) the statement takes the coalesced trip instead, so nothing waits on the loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connection, transaction

from lensrelay.docstore.loopsqlite import ThreadSqlite
from mcp_tools.models import CredentialGeneration, ReadMark


@dataclass(frozen=True)
class _Mark:
    session_key: str
    doc_id: str
    read_at: datetime


@dataclass
class _Trip:
    """What the next trip does; each waiter gets the counter's value (marks: the same, unused)."""

    marks: dict[tuple[str, str], datetime] = field(default_factory=dict)
    waiters: list[tuple[asyncio.Future[int], tuple[str, str] | None]] = field(default_factory=list)


def _generation_sql() -> str:
    table = connection.ops.quote_name(CredentialGeneration._meta.db_table)
    return f"SELECT value FROM {table} WHERE id = 1"


def _mark_sql() -> str:
    q = connection.ops.quote_name
    table, key, doc, at = q(ReadMark._meta.db_table), q("session_key"), q("doc_id"), q("read_at")
    # SQLite (3.24+) and PostgreSQL share this upsert; the unique constraint is (session_key, doc_id).
    return (
        f"INSERT INTO {table} ({key}, {doc}, {at}) VALUES (%s, %s, %s) "
        f"ON CONFLICT ({key}, {doc}) DO UPDATE SET {at} = excluded.{at}"
    )


def _run(marks: list[_Mark]) -> tuple[int, dict[tuple[str, str], Exception]]:
    """One trip, on Django's sync thread: write the marks (one transaction), then read the counter.

    Returns the counter and the marks that could not be written: one bad mark (say, a key too long for
    the column) fails its own `read`, not the other requests that shared the trip."""
    failed: dict[tuple[str, str], Exception] = {}
    adapt = connection.ops.adapt_datetimefield_value
    rows = [(m.session_key, m.doc_id, adapt(m.read_at)) for m in marks]
    with connection.cursor() as cursor:
        if rows:
            try:
                with transaction.atomic():
                    cursor.executemany(_mark_sql(), rows)
            except DatabaseError:
                for row in rows:  # one by one, to find the culprit(s); an outage fails them all
                    try:
                        with transaction.atomic():
                            cursor.execute(_mark_sql(), row)
                    except DatabaseError as exc:
                        failed[(row[0], row[1])] = exc
        cursor.execute(_generation_sql())
        row = cursor.fetchone()
    return (-1 if row is None else int(row[0])), failed


_arun = sync_to_async(_run)


class _Coalescer:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._next = _Trip()
        self._driver: asyncio.Task[None] | None = None

    def _join(self) -> _Trip:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (tests): nothing from the old one carries over
            self._loop, self._next, self._driver = loop, _Trip(), None
        if self._driver is None:
            self._driver = loop.create_task(self._drive())
        return self._next

    async def ask(self, mark: _Mark | None) -> int:
        trip = self._join()
        key = None
        if mark is not None:
            key = (mark.session_key, mark.doc_id)
            trip.marks[key] = mark.read_at
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        trip.waiters.append((waiter, key))
        return await waiter

    async def _drive(self) -> None:
        try:
            while self._next.waiters:
                # Taken before the trip starts: everything in it was asked before its statements run.
                trip, self._next = self._next, _Trip()
                marks = [_Mark(key, doc, at) for (key, doc), at in trip.marks.items()]
                try:
                    value, failed = await _arun(marks)
                except BaseException as exc:
                    _settle(trip.waiters, exc=exc)
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    continue
                _settle(trip.waiters, value=value, failed=failed)
        finally:
            self._driver = None
            if self._next.waiters:  # cancelled with requests waiting: they fail rather than hang
                pending, self._next = self._next, _Trip()
                _settle(pending.waiters, exc=asyncio.CancelledError())


def _settle(
    waiters: list[tuple[asyncio.Future[int], tuple[str, str] | None]],
    *,
    value: int = 0,
    exc: BaseException | None = None,
    failed: dict[tuple[str, str], Exception] | None = None,
) -> None:
    for waiter, key in waiters:
        if waiter.done():  # its request was cancelled meanwhile
            continue
        if exc is None and failed and key in failed:
            waiter.set_exception(failed[key])
        elif exc is None:
            waiter.set_result(value)
        elif isinstance(exc, asyncio.CancelledError):
            waiter.cancel()
        else:
            waiter.set_exception(exc)


_coalescer = _Coalescer()


class _LoopSqlite:
    """The counter read and mark writes on the event loop's own connection (SQLite only)."""

    def __init__(self) -> None:
        self._sqlite = ThreadSqlite()

    def _connection(self) -> sqlite3.Connection | None:
        return self._sqlite.connection()

    def generation(self) -> int | None:
        """The counter, or None when this way cannot answer right now."""
        try:
            conn = self._connection()
            if conn is None:
                return None
            rows = conn.execute(_sqlite_generation_sql()).fetchall()
        except sqlite3.Error:
            return None
        return -1 if not rows else int(rows[0][0])

    def write_mark(self, mark: _Mark) -> bool:
        """True once the mark is committed; False when this way cannot write it right now."""
        try:
            conn = self._connection()
            if conn is None:
                return False
            conn.execute(_sqlite_mark_sql(), (mark.session_key, mark.doc_id, _sqlite_datetime(mark.read_at)))
        except sqlite3.Error:
            return False
        return True


def _sqlite_datetime(value: datetime) -> str:
    """As Django's SQLite backend stores an aware datetime (naive UTC, `str()`), without looking up a
    connection wrapper on the loop's thread (that made a new one per request context)."""
    return str(value.astimezone(UTC).replace(tzinfo=None))


def _sqlite_generation_sql() -> str:
    return f'SELECT value FROM "{CredentialGeneration._meta.db_table}" WHERE id = 1'


def _sqlite_mark_sql() -> str:
    return (
        f'INSERT INTO "{ReadMark._meta.db_table}" (session_key, doc_id, read_at) VALUES (?, ?, ?) '
        "ON CONFLICT (session_key, doc_id) DO UPDATE SET read_at = excluded.read_at"
    )


_loop_sqlite = _LoopSqlite()


async def generation() -> int:
    """The credential counter, read after this call began (-1 if the row does not exist yet)."""
    value = _loop_sqlite.generation()
    if value is not None:
        return value
    return await _coalescer.ask(None)


async def write_mark(*, session_key: str, doc_id: str, read_at: datetime) -> None:
    """Upsert a read mark; returns once it is committed."""
    mark = _Mark(session_key, doc_id, read_at)
    if not _loop_sqlite.write_mark(mark):
        await _coalescer.ask(mark)
