"""Notes' modified times: one statement for a store's every few seconds, none on the log's appends."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore import modified, persistence
from lensrelay.docstore.modified import ModifiedTimes
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.room import Room
from lensrelay.models import Document
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)

WINDOW = 0.3
LONG_AGO = timedelta(days=3)


def insert(room: Room, value: str) -> None:
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_insert(ytext, current=str(ytext), index=0, value=value)


@pytest.fixture
def written(monkeypatch: Any) -> list[list[str]]:
    """Every modified-time statement's notes, in order."""
    monkeypatch.setattr(modified, "MODIFIED_RESOLUTION_SECONDS", WINDOW)
    statements: list[list[str]] = []
    real = persistence.touch_modified

    def counting(doc_ids: list[str]) -> None:
        statements.append(list(doc_ids))
        real(doc_ids)

    monkeypatch.setattr(persistence, "touch_modified", counting)
    return statements


async def notes_long_untouched(store: Any, make_folder: Any, count: int) -> list[Room]:
    folder = await sync_to_async(make_folder)("Lens")
    notes = [await document_create(store=store, folder=folder, path=f"/N{n}.md") for n in range(count)]
    ids = [note.doc_id for note in notes]
    await sync_to_async(Document.objects.filter(doc_id__in=ids).update)(modified=timezone.now() - LONG_AGO)
    rooms = [await store.get(doc_id) for doc_id in ids]
    return [room for room in rooms if room is not None]


def modified_of(doc_ids: list[str]) -> dict[str, Any]:
    return dict(Document.objects.filter(doc_id__in=doc_ids).values_list("doc_id", "modified"))


async def test_notes_typed_into_get_their_times_in_one_statement_per_window(
    store: Any, make_folder: Any, written: list[list[str]]
) -> None:
    rooms = await notes_long_untouched(store, make_folder, 5)
    await asyncio.sleep(2 * WINDOW)  # the creations' own window has ended
    written.clear()
    ids = [room.doc_id for room in rooms]

    started = time.monotonic()
    typed = 0
    while time.monotonic() - started < 4 * WINDOW:
        for room in rooms:
            insert(room, "x")
        await asyncio.gather(*(room.flushed() for room in rooms))
        typed += len(rooms)
        await asyncio.sleep(0.02)
    last_edit = timezone.now()
    await asyncio.sleep(2.5 * WINDOW)  # the last window ends and is written
    await store.db(lambda: None)  # what it spawned on the database thread is done

    # The first change is written at once, alone; after it, one statement per window for every note
    # changed in it: about five in all, not one per note (25) nor per change (hundreds).
    assert typed > 100
    assert written[0] == [ids[0]]
    assert 3 <= len(written) <= 7, written
    assert all(sorted(statement) == sorted(ids) for statement in written[1:])
    times = await sync_to_async(modified_of)(ids)
    for doc_id in ids:
        # Each note's time is that of the window after its last change (a couple of seconds at most).
        assert last_edit - timedelta(seconds=WINDOW) <= times[doc_id] <= timezone.now()


async def test_a_change_after_a_quiet_spell_is_written_at_once_and_a_closing_store_writes_the_rest(
    store: Any, make_folder: Any, written: list[list[str]]
) -> None:
    first, second = await notes_long_untouched(store, make_folder, 2)
    await asyncio.sleep(2 * WINDOW)
    written.clear()
    times = store.attached(ModifiedTimes)

    insert(first, "a")
    await first.flushed()
    await store.db(lambda: None)
    assert written == [[first.doc_id]]
    insert(second, "b")  # inside the window: waits for its end...
    await second.flushed()
    await store.db(lambda: None)
    assert written == [[first.doc_id]]
    await times.flush()  # ...or for the store to close
    assert written == [[first.doc_id], [second.doc_id]]
    stamps = await sync_to_async(modified_of)([first.doc_id, second.doc_id])
    assert all(stamp > timezone.now() - timedelta(seconds=5) for stamp in stamps.values())
    await asyncio.sleep(1.5 * WINDOW)
    assert len(written) == 2  # nothing left over to write when the window would have ended


async def test_changes_to_a_folder_document_write_no_modified_time(
    store: Any, make_folder: Any, written: list[list[str]]
) -> None:
    (note,) = await notes_long_untouched(store, make_folder, 1)
    await asyncio.sleep(2 * WINDOW)
    written.clear()
    row = await sync_to_async(Document.objects.select_related("folder").get)(doc_id=note.doc_id)
    room = await store.get(row.folder.doc_id)
    assert room is not None and room.kind == "folder"
    with room.transact() as doc:
        doc.get("stray", type=Text).insert(0, "x")
    await room.flushed()
    await asyncio.sleep(1.5 * WINDOW)
    await store.db(lambda: None)
    assert written == []
