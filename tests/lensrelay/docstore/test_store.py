"""The document store: persist before broadcast, compaction, catch-up from other processes, unloading."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Doc, Text

from lensrelay.docstore import persistence
from lensrelay.docstore.logwriter import LoopAppender
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.room import Room
from lensrelay.models import YSnapshot, YUpdate
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


class Recorder:
    """A peer that records frames, and whether the update was logged when it arrived."""

    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id
        self.frames: list[tuple[bytes, int]] = []

    async def send_frame(self, frame: bytes) -> None:
        logged = await sync_to_async(YUpdate.objects.filter(doc_id=self.doc_id).count)()
        self.frames.append((frame, logged))


def insert(room: Room, index: int, value: str) -> None:
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_insert(ytext, current=str(ytext), index=index, value=value)


def stored_text(doc_id: str) -> str:
    state = persistence.load_state(doc_id)
    doc = Doc()
    if state.update:
        doc.apply_update(state.update)
    return str(doc.get("contents", type=Text))


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text="start")


async def test_changes_of_one_turn_are_logged_once_before_anyone_sees_them(store: Any, note: Any) -> None:
    room = await store.get(note.doc_id)
    peer = Recorder(note.doc_id)
    room.join(peer)
    before = await sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id).count)()
    for n in range(20):
        insert(room, 0, str(n % 10))
    await room.flushed()
    after = await sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id).count)()
    assert after == before + 1  # twenty changes in one turn: one merged row
    assert len(peer.frames) == 1
    assert peer.frames[0][1] == after  # the row existed when the frame was sent
    assert await sync_to_async(stored_text)(note.doc_id) == str(room.doc.get("contents", type=Text))


async def test_a_database_outage_delays_delivery_but_loses_nothing(
    store: Any, note: Any, monkeypatch: Any
) -> None:
    room = await store.get(note.doc_id)
    peer = Recorder(note.doc_id)
    room.join(peer)
    real = persistence.append_updates
    failures = {"left": 2}

    def flaky(*args: Any, **kwargs: Any) -> list[int]:
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("database unavailable")
        return real(*args, **kwargs)

    monkeypatch.setattr(persistence, "append_updates", flaky)
    # The event loop's own SQLite append finds the database unavailable too: the thread takes over.
    monkeypatch.setattr(LoopAppender, "append", lambda *args, **kwargs: None)
    insert(room, 5, " and more")
    await asyncio.sleep(0.02)
    assert peer.frames == []  # not yet durable: not yet sent
    await asyncio.wait_for(room.flushed(), timeout=10)
    assert len(peer.frames) == 1 and failures["left"] == 0
    assert await sync_to_async(stored_text)(note.doc_id) == "start and more"


async def test_compaction_folds_the_log_into_a_snapshot(store: Any, note: Any) -> None:
    room = await store.get(note.doc_id)
    for n in range(5):
        insert(room, 0, f"{n}")
        await room.flushed()
    rows = await sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id).count)()
    assert rows >= 5
    await store.compact(room)
    assert await sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id).count)() == 0
    assert await sync_to_async(YSnapshot.objects.filter(doc_id=note.doc_id).exists)()
    assert await sync_to_async(stored_text)(note.doc_id) == "43210start"
    insert(room, 0, "x")
    await room.flushed()
    assert await sync_to_async(stored_text)(note.doc_id) == "x43210start"


async def test_updates_logged_by_another_process_reach_loaded_rooms(store: Any, note: Any) -> None:
    room = await store.get(note.doc_id)
    peer = Recorder(note.doc_id)
    room.join(peer)
    other = Doc()
    other.apply_update(room.state_update())
    before = other.get_state()
    other.get("contents", type=Text).insert(0, "elsewhere: ")
    update = other.get_update(before)
    own_rows = sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id, writer=store.writer).count)
    logged_here = await own_rows()
    await sync_to_async(persistence.append_update)(note.doc_id, update, is_content=True, writer="elsewhere")
    assert await store.catch_up() >= 1
    await room.flushed()
    assert str(room.doc.get("contents", type=Text)) == "elsewhere: start"
    assert len(peer.frames) == 1  # broadcast to the clients here...
    assert await own_rows() == logged_here  # ...but not logged a second time
    assert await store.catch_up() == 0  # each logged row is handled once, however often it is re-read


async def test_a_documents_rows_of_one_catch_up_are_applied_as_one_update(store: Any, note: Any) -> None:
    """The derive process catches up each note's rows of a pass (~7 at a team's load): one rehearsal,
    transaction and broadcast for them, not one each."""
    room = await store.get(note.doc_id)
    peer = Recorder(note.doc_id)
    room.join(peer)
    other = Doc()
    other.apply_update(room.state_update())
    for word in ("one ", "two ", "three "):
        before = other.get_state()
        other.get("contents", type=Text).insert(0, word)
        update = other.get_update(before)
        await sync_to_async(persistence.append_update)(
            note.doc_id, update, is_content=True, writer="elsewhere"
        )
    transactions: list[object] = []
    room.doc.observe(transactions.append)
    assert await store.catch_up() == 3
    await room.flushed()
    assert str(room.doc.get("contents", type=Text)) == "three two one start"
    assert len(transactions) == 1
    assert len(peer.frames) == 1
    assert await store.catch_up() == 0


async def test_a_broken_row_among_them_is_left_and_the_others_are_applied(store: Any, note: Any) -> None:
    room = await store.get(note.doc_id)
    other = Doc()
    other.apply_update(room.state_update())
    updates = []
    for word in ("kept ", "also "):
        before = other.get_state()
        other.get("contents", type=Text).insert(0, word)
        updates.append(other.get_update(before))
    for update in (updates[0], b"\x07broken", updates[1]):
        await sync_to_async(persistence.append_update)(
            note.doc_id, update, is_content=True, writer="elsewhere"
        )
    assert await store.catch_up() == 2
    await room.flushed()
    assert str(room.doc.get("contents", type=Text)) == "also kept start"
    assert await store.catch_up() == 0  # the broken row is not tried again


async def test_a_store_that_catches_up_at_its_own_passes_does_not_on_each_poll(store: Any, note: Any) -> None:
    """The derive process's: its follower catches up before each pass reads a note."""
    store.catch_up_on_poll = False
    store.poll_seconds = 0.01
    room = await store.get(note.doc_id)
    await asyncio.sleep(1.1)  # a poll at the fixture's interval, then at the new one
    other = Doc()
    other.apply_update(room.state_update())
    before = other.get_state()
    other.get("contents", type=Text).insert(0, "later ")
    update = other.get_update(before)
    await sync_to_async(persistence.append_update)(note.doc_id, update, is_content=True, writer="elsewhere")
    await asyncio.sleep(0.2)  # twenty polls
    assert str(room.doc.get("contents", type=Text)) == "start"
    assert await store.catch_up() == 1
    assert str(room.doc.get("contents", type=Text)) == "later start"


async def test_idle_rooms_unload_and_reload_from_the_database(store: Any, note: Any) -> None:
    room = await store.get(note.doc_id)
    insert(room, 0, "kept ")
    await room.flushed()
    store.idle_seconds = 0
    await store.unload_idle()
    assert note.doc_id not in store.rooms
    reloaded = await store.get(note.doc_id)
    assert reloaded is not room
    assert str(reloaded.doc.get("contents", type=Text)) == "kept start"


async def test_unknown_documents_are_none(store: Any, note: Any) -> None:
    assert await store.get("no-such-doc") is None


async def test_a_fresh_feed_reports_only_what_is_logged_after_it_starts(store: Any, note: Any) -> None:
    older = Doc()
    older.get("contents", type=Text).insert(0, "before the start")
    await sync_to_async(persistence.append_update)(
        note.doc_id, older.get_update(), is_content=True, writer="elsewhere"
    )
    store.rooms.pop(note.doc_id).close()
    store._cursor, store._caught_up = None, set()  # as in a process that starts now
    reported: list[str] = []
    store._notify_foreign = reported.append
    await store.start_feed()
    await store.catch_up()
    assert reported == []  # already in whatever this process reads from now on: not news

    newer = Doc()
    newer.get("contents", type=Text).insert(0, "after the start")
    await sync_to_async(persistence.append_update)(
        note.doc_id, newer.get_update(), is_content=True, writer="elsewhere"
    )
    await store.catch_up()
    assert reported == [note.doc_id]
