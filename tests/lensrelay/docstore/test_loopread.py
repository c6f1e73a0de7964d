"""A room read on the loop (SQLite) holds exactly what the database thread's load_state reads."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from pycrdt import Doc, Text

from lensrelay.docstore import persistence
from lensrelay.docstore.loopread import LoopReader
from lensrelay.models import YUpdate
from lensrelay.vault.documents import document_create

from .test_store import insert

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reader() -> Any:
    if connection.vendor != "sqlite":
        pytest.skip("the loop's own reads are for SQLite only")
    loop_reader = LoopReader.for_default_database(window=500)
    assert loop_reader is not None
    yield loop_reader
    loop_reader.close()


def text_of(update: bytes | None) -> str:
    doc: Doc = Doc()
    if update:
        doc.apply_update(update)
    return str(doc.get("contents", type=Text))


async def test_the_loop_reads_what_load_state_reads(reader: LoopReader, store: Any, make_folder: Any) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="start")
    room = await store.get(note.doc_id)
    for n in range(5):
        insert(room, 0, str(n))
        await room.flushed()
    await store.compact(room)  # a snapshot...
    insert(room, 0, "after ")  # ...and log rows past it
    await room.flushed()
    loaded = reader.room(note.doc_id)
    assert loaded is not None and loaded.kind == "content" and loaded.state is not None
    expected = await sync_to_async(persistence.load_state)(note.doc_id)
    assert (loaded.state.last_update_id, loaded.state.log_rows) == (
        expected.last_update_id,
        expected.log_rows,
    )
    assert text_of(loaded.state.update) == text_of(expected.update) == "after 43210start"
    origin = await sync_to_async(persistence.feed_origin)(window=500)
    assert loaded.origin is not None and origin.last_update_id in origin.committed
    assert loaded.origin.last_update_id == origin.last_update_id
    # Every row the database thread lists is marked handled; the other ids of the window are of no row
    # (folded by the compaction above) and no later row will ever have them.
    assert origin.committed <= loaded.origin.committed
    extra = loaded.origin.committed - origin.committed
    assert extra and not await YUpdate.objects.filter(id__in=extra).aexists()
    assert min(loaded.origin.committed) == max(1, origin.last_update_id - 499)
    insert(room, 0, "later ")
    await room.flushed()
    assert await YUpdate.objects.filter(id__in=loaded.origin.committed).acount() == len(origin.committed)

    unknown = reader.room("no-such-doc")
    assert unknown is not None and unknown.kind is None


async def test_a_store_loads_rooms_on_the_loop_with_the_right_cursor(
    reader: LoopReader, store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="start")
    # As on a fresh server: the room not loaded, the catch-up cursor not set.
    store.rooms.pop(note.doc_id).close()
    store._cursor = None
    calls: list[str] = []
    db = store.db

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(fn.__name__)
        return await db(fn, *args, **kwargs)

    store.db = counted
    room = await store.get(note.doc_id)
    assert room is not None and text_of(room.state_update()) == "start"
    assert calls == []  # no trip to the database thread
    assert store._cursor == await sync_to_async(persistence.last_update_id)()
    # Another process logs a change afterwards: the catch-up finds it.
    other: Doc = Doc()
    other.apply_update(room.state_update())
    before = other.get_state()
    other.get("contents", type=Text).insert(0, "elsewhere ")
    await YUpdate.objects.acreate(doc_id=note.doc_id, data=other.get_update(before), writer="other")
    assert await store.catch_up() >= 1  # the window re-reads older rows too: a CRDT ignores them
    assert text_of(room.state_update()) == "elsewhere start"


async def test_a_write_in_progress_does_not_stop_the_read(
    reader: LoopReader, store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="start")
    writer = sqlite3.connect(str(settings.DATABASES["default"]["NAME"]), isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # WAL: readers do not wait for a writer
        loaded = reader.room(note.doc_id)
        assert loaded is not None and loaded.state is not None
        assert text_of(loaded.state.update) == "start"
    finally:
        writer.execute("ROLLBACK")
        writer.close()


async def test_the_log_origin_is_read_only_for_a_stores_first_room(
    reader: LoopReader, store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    first = await document_create(store=store, folder=folder, path="/First.md", text="one")
    second = await document_create(store=store, folder=folder, path="/Second.md", text="two")
    without = reader.room(second.doc_id, origin=False)
    assert without is not None and without.origin is None
    assert without.state is not None and text_of(without.state.update) == "two"
    missing = reader.room("no-such-doc", origin=False)
    assert missing is not None and missing.kind is None and missing.origin is None

    # A fresh server: its first room load sets the cursor from the origin read with it...
    for doc_id in (first.doc_id, second.doc_id):
        store.rooms.pop(doc_id).close()
    store._cursor = None
    asked: list[bool] = []
    assert store._loop_reader is not None
    room_read = store._loop_reader.room

    def recorded(doc_id: str, *, origin: bool = True) -> Any:
        asked.append(origin)
        return room_read(doc_id, origin=origin)

    store._loop_reader.room = recorded
    assert await store.get(first.doc_id) is not None
    cursor = store._cursor
    assert cursor == await sync_to_async(persistence.last_update_id)()
    # ...the next one, already following the log, does not read it again, and the cursor stays.
    room = await store.get(second.doc_id)
    assert room is not None and text_of(room.state_update()) == "two"
    assert asked == [True, False]
    assert store._cursor == cursor
