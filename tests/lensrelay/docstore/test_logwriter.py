"""The update log's writer: appends are committed in order, one bad entry fails alone, and on SQLite a
free database is appended to on the event loop while a locked one is left to the thread."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError, connections

from lensrelay.docstore import persistence
from lensrelay.docstore.logwriter import LogWriter, LoopAppender, retrying_while_locked
from lensrelay.models import YUpdate

pytestmark = pytest.mark.django_db(transaction=True)


def _rows(doc_id: str) -> list[tuple[int, bytes, str]]:
    rows = YUpdate.objects.filter(doc_id=doc_id).order_by("id").values_list("id", "data", "writer")
    return [(row_id, bytes(data), writer) for row_id, data, writer in rows]


async def test_appends_queued_together_are_all_committed_in_order() -> None:
    writer = LogWriter(asyncio.get_running_loop(), writer="w1", prepare=lambda: None)
    try:
        futures = [writer.append("doc-a", f"u{n}".encode()) for n in range(50)]
        ids = await asyncio.wait_for(asyncio.gather(*futures), timeout=10)
    finally:
        await asyncio.get_running_loop().run_in_executor(None, writer.close)
    assert ids == sorted(ids) and len(set(ids)) == 50
    rows = await sync_to_async(_rows)("doc-a")
    assert rows == [(row_id, f"u{n}".encode(), "w1") for n, row_id in enumerate(ids)]


async def test_one_entry_the_database_refuses_does_not_fail_the_rest(monkeypatch: Any) -> None:
    real = persistence.append_updates

    def refusing(entries: Sequence[tuple[str, bytes, bool, str]], *, writer: str) -> list[int]:
        if any(doc_id == "bad" for doc_id, *_ in entries):
            raise RuntimeError("refused")
        return real(entries, writer=writer)

    monkeypatch.setattr(persistence, "append_updates", refusing)
    writer = LogWriter(asyncio.get_running_loop(), writer="w2", prepare=lambda: None)
    try:
        futures = [writer.append("bad" if n == 3 else "good", bytes([n])) for n in range(8)]
        results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), timeout=10)
    finally:
        await asyncio.get_running_loop().run_in_executor(None, writer.close)
    assert isinstance(results[3], RuntimeError)
    assert all(isinstance(r, int) for n, r in enumerate(results) if n != 3)
    good = [data for _, data, _ in await sync_to_async(_rows)("good")]
    assert good == [bytes([n]) for n in range(8) if n != 3]
    assert await sync_to_async(_rows)("bad") == []


async def test_a_closed_writer_refuses_new_appends() -> None:
    writer = LogWriter(asyncio.get_running_loop(), writer="w3", prepare=lambda: None)
    first = writer.append("doc-c", b"kept")
    await asyncio.get_running_loop().run_in_executor(None, writer.close)
    assert isinstance(await first, int)  # what was queued before close is written
    with pytest.raises(RuntimeError, match="closed"):
        writer.append("doc-c", b"late")
    assert [data for _, data, _ in await sync_to_async(_rows)("doc-c")] == [b"kept"]


def _on_loop() -> LoopAppender:
    appender = LoopAppender.for_default_database()
    if appender is None:
        pytest.skip("the event loop's own append is for SQLite database files only")
    return appender


async def test_on_sqlite_a_free_database_is_appended_to_on_the_loop_itself() -> None:
    on_loop = _on_loop()
    writer = LogWriter(asyncio.get_running_loop(), writer="w4", prepare=lambda: None, on_loop=on_loop)
    try:
        future = writer.append("doc-d", b"now")
        assert future.done()  # committed before append returned: no thread was involved
        row_id = future.result()
    finally:
        await asyncio.get_running_loop().run_in_executor(None, writer.close)
    assert await sync_to_async(_rows)("doc-d") == [(row_id, b"now", "w4")]


async def test_on_sqlite_a_locked_database_sends_the_append_to_the_thread() -> None:
    on_loop = _on_loop()
    locker = sqlite3.connect(on_loop.path, isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    writer = LogWriter(asyncio.get_running_loop(), writer="w5", prepare=lambda: None, on_loop=on_loop)
    try:
        future = writer.append("doc-e", b"later")
        await asyncio.sleep(0.2)
        assert not future.done()  # waiting for the lock on the writer thread, not lost, not on the loop
        locker.execute("COMMIT")
        row_id = await asyncio.wait_for(future, timeout=10)
    finally:
        locker.close()
        await asyncio.get_running_loop().run_in_executor(None, writer.close)
    assert await sync_to_async(_rows)("doc-e") == [(row_id, b"later", "w5")]


async def test_the_loops_own_appends_never_checkpoint_the_log() -> None:
    """A checkpoint copies the write-ahead log into the database and syncs it: 100 ms and more that no
    delivery may wait for. The loop's connection leaves it to the connections that commit from threads."""
    on_loop = _on_loop()
    try:
        for _ in range(800):  # 3.2 MB: past the 1,000 pages at which a connection checkpoints by default
            assert on_loop.append("doc-f", bytes(4096), "w6") is not None
        checker = sqlite3.connect(on_loop.path, isolation_level=None)
        try:
            busy, frames, copied = checker.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            checker.close()
    finally:
        on_loop.close()
    assert frames > 1000 and copied == frames and busy == 0


def test_one_batch_is_one_insert_in_order_and_touches_only_what_it_names() -> None:
    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from lensrelay.models import Document, Folder

    folder = Folder.objects.create(name="Touch", doc_id="folder-touch")
    long_ago = timezone.now() - timedelta(days=3)
    for name in ("a", "b"):
        Document.objects.create(folder=folder, path=f"/{name}.md", doc_id=f"doc-{name}", modified=long_ago)
    entries = [("doc-a", b"1", True, "ann"), ("doc-b", b"2", False, ""), ("doc-a", b"3", False, "x" * 300)]
    with CaptureQueriesContext(connection) as queries:
        ids = persistence.append_updates(entries, writer="w9")
    inserts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == 1
    assert ids == sorted(ids) and len(set(ids)) == 3
    rows = YUpdate.objects.filter(pk__in=ids).order_by("id").values_list("doc_id", "data", "author")
    assert [(d, bytes(data), a) for d, data, a in rows] == [
        ("doc-a", b"1", "ann"),
        ("doc-b", b"2", ""),
        ("doc-a", b"3", "x" * 200),
    ]
    modified = dict(Document.objects.values_list("doc_id", "modified"))
    assert modified["doc-a"] > long_ago + timedelta(days=2) and modified["doc-b"] == long_ago
    assert persistence.append_updates([], writer="w9") == []

    persistence.touch_modified(["doc-b"])
    assert Document.objects.get(doc_id="doc-b").modified > long_ago + timedelta(days=2)


async def test_on_sqlite_the_thread_asks_again_for_the_lock_rather_than_sleeping_in_sqlite(
    monkeypatch: Any,
) -> None:
    """SQLite's busy handler sleeps 1, 2, 5, 10 ms and on between tries: the writer thread asks again itself,
    every fraction of a millisecond, so an append follows another writer's short transaction at once."""
    on_loop = _on_loop()
    tries: list[int] = []  # one per attempt
    real = persistence.append_updates

    def counted(*args: Any, **kwargs: Any) -> Any:
        tries.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(persistence, "append_updates", counted)
    locker = sqlite3.connect(on_loop.path, isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")
    writer = LogWriter(asyncio.get_running_loop(), writer="w7", prepare=lambda: None, on_loop=on_loop)
    try:
        future = writer.append("doc-g", b"asked")
        await asyncio.sleep(0.05)
        assert not future.done()
        locker.execute("COMMIT")
        row_id = await asyncio.wait_for(future, timeout=10)
    finally:
        locker.close()
        await asyncio.get_running_loop().run_in_executor(None, writer.close)
    # In SQLite's handler it would have been one call that waited; asked again, it is many (at most one
    # every 0.1 to 1 ms over the 50 ms the lock was held).
    assert len(tries) >= 10
    assert await sync_to_async(_rows)("doc-g") == [(row_id, b"asked", "w7")]


def test_an_error_other_than_a_lock_is_not_asked_again() -> None:
    calls: list[int] = []

    def broken() -> int:
        calls.append(1)
        raise OperationalError("no such table: lensrelay_yupdate")

    with pytest.raises(OperationalError, match="no such table"):
        retrying_while_locked(broken)
    assert calls == [1]


def test_a_lock_held_past_the_busy_timeout_fails_the_append() -> None:
    monkey_options = connections["default"].settings_dict.setdefault("OPTIONS", {})
    before = monkey_options.get("timeout")
    monkey_options["timeout"] = 0.05
    calls: list[int] = []

    def locked() -> int:
        calls.append(1)
        raise OperationalError("database is locked")

    try:
        with pytest.raises(OperationalError, match="locked"):
            retrying_while_locked(locked)
    finally:
        monkey_options["timeout"] = before
    if connections["default"].vendor == "sqlite":
        assert len(calls) > 5  # asked again until the busy timeout
    else:
        assert calls == [1]  # PostgreSQL's writers wait in the server: nothing to ask again


def test_on_postgresql_a_live_append_is_one_statement_bound_on_the_server(monkeypatch: Any) -> None:
    """The log writer's batch on PostgreSQL: no transaction around the one insert, its parameters sent apart
    from the SQL (Django's client-side cursors are not used: they fail here), committed when it returns,
    bytes and ids as for the other path; a refused batch is Django's error and leaves the connection
    usable."""
    import psycopg
    from django.db import DataError, connection

    if connection.vendor != "postgresql":
        pytest.skip("the PostgreSQL pass checks this")

    def client_side(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a client-side cursor was used")

    connection.ensure_connection()  # a new connection's own setup goes through Django's cursors
    monkeypatch.setattr(psycopg.ClientCursor, "execute", client_side)
    entries = [("doc-pg", b"\x00\xff\x01", False, "ann"), ("doc-pg", bytes(range(256)), False, "x" * 300)]
    ids = persistence.append_updates(entries, writer="w9")
    assert ids == sorted(ids) and len(set(ids)) == 2
    assert not connection.in_atomic_block and connection.connection.info.transaction_status == 0  # idle
    monkeypatch.undo()
    with psycopg.connect(**connection.get_connection_params()) as other:  # another session sees it committed
        seen = other.execute(
            "SELECT data, author FROM lensrelay_yupdate WHERE id = ANY(%s) ORDER BY id", [ids]
        )
        assert [(bytes(data), author) for data, author in seen] == [
            (b"\x00\xff\x01", "ann"),
            (bytes(range(256)), "x" * 200),
        ]
    with pytest.raises(DataError):
        persistence.append_updates([("d" * 101, b"1", False, "")], writer="w9")
    assert YUpdate.objects.filter(doc_id__startswith="ddd").count() == 0
    (later,) = persistence.append_updates([("doc-pg", b"2", False, "")], writer="w9")
    assert later > ids[-1]
