"""Compaction never loses an update, whoever lags: loads during compaction, lagging processes, late rows."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Doc, Text

from lensrelay.docstore import persistence
from lensrelay.models import YSnapshot, YUpdate
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


def text_of(update: bytes | None) -> str:
    doc: Doc[Any] = Doc()
    if update:
        doc.apply_update(update)
    return str(doc.get("contents", type=Text))


class Elsewhere:
    """Another process editing a document: its own Doc, logging its updates with its own writer name."""

    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id
        self.doc: Doc[Any] = Doc()
        self.doc.apply_update(persistence.load_state(doc_id).update or b"\x00\x00")

    def append(self, value: str) -> None:
        before = self.doc.get_state()
        ytext = self.doc.get("contents", type=Text)
        ytext.insert(len(str(ytext).encode()), value)
        persistence.append_update(self.doc_id, self.doc.get_update(before), is_content=True, writer="other")

    @property
    def text(self) -> str:
        return str(self.doc.get("contents", type=Text))


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text="start")


async def test_a_load_while_another_process_compacts_misses_no_batch(
    store: Any, note: Any, monkeypatch: Any
) -> None:
    def edit_then_load() -> tuple[str, str]:
        other = Elsewhere(note.doc_id)
        for n in range(5):
            other.append(f" {n}")
        calls = {"n": 0}

        def hooked(manager: Any) -> None:
            real = manager.filter

            def filter_(*args: Any, **kwargs: Any) -> Any:
                calls["n"] += 1
                if calls["n"] == 2:
                    # The worst moment: one query has run, and a compaction commits before the other.
                    persistence.compact(note.doc_id)
                return real(*args, **kwargs)

            monkeypatch.setattr(manager, "filter", filter_)

        hooked(YSnapshot.objects)
        hooked(YUpdate.objects)
        state = persistence.load_state(note.doc_id)
        monkeypatch.undo()
        assert calls["n"] >= 2
        return text_of(state.update), other.text

    loaded, expected = await sync_to_async(edit_then_load)()
    assert expected == "start 0 1 2 3 4"
    assert loaded == expected


@pytest.fixture
def polls_never(settings: Any) -> None:
    """The store made after this never polls by itself: a test's process lags for as long as it says."""
    settings.LENSRELAY_POLL_SECONDS = 3600.0


async def test_a_lagging_process_merges_a_snapshot_that_folded_rows_it_never_read(
    polls_never: None, store: Any, note: Any
) -> None:
    # Its own poll (every 0.5 s) would otherwise read the rows while they are logged, under load: then
    # the snapshot brings nothing new and the catch-up below rightly applies nothing.
    assert store.poll_seconds == 3600.0
    room = await store.get(note.doc_id)
    other = await sync_to_async(Elsewhere)(note.doc_id)
    for n in range(30):
        await sync_to_async(other.append)(f" {n}")
    # Another worker compacts before this one polls: the rows it would have read are gone.
    folded = await sync_to_async(persistence.compact)(note.doc_id)
    assert folded >= 30
    assert await sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id).count)() == 0
    assert await store.catch_up() >= 1
    await room.flushed()
    assert str(room.doc.get("contents", type=Text)) == other.text
    assert await store.catch_up() == 0  # the snapshot is merged once


async def test_a_process_that_polled_before_the_compaction_finds_nothing_new_in_the_snapshot(
    polls_never: None, store: Any, note: Any
) -> None:
    # The other order of the test above: this process's poll read every row before another compacted.
    room = await store.get(note.doc_id)
    other = await sync_to_async(Elsewhere)(note.doc_id)
    for n in range(30):
        await sync_to_async(other.append)(f" {n}")
    assert await store.catch_up() == 30
    assert await sync_to_async(persistence.compact)(note.doc_id) >= 30
    assert await store.catch_up() == 0  # the snapshot is merged, and adds nothing
    await room.flushed()
    assert str(room.doc.get("contents", type=Text)) == other.text
    assert text_of((await sync_to_async(persistence.load_state)(note.doc_id)).update) == other.text


async def test_a_row_committed_after_a_compaction_with_a_lower_id_is_kept(store: Any, note: Any) -> None:
    def run() -> tuple[str, str, str]:
        other = Elsewhere(note.doc_id)
        other.append(" early")
        folded_ids = list(YUpdate.objects.filter(doc_id=note.doc_id).values_list("id", flat=True))
        persistence.compact(note.doc_id)
        # A concurrent writer reserved an id before the compaction read the log and committed after it.
        before = other.doc.get_state()
        other.doc.get("contents", type=Text).insert(0, "late ")
        late = other.doc.get_update(before)
        YUpdate.objects.create(id=min(folded_ids), doc_id=note.doc_id, data=late, writer="w")
        loaded = text_of(persistence.load_state(note.doc_id).update)
        persistence.compact(note.doc_id)
        return loaded, text_of(persistence.load_state(note.doc_id).update), other.text

    loaded, compacted, expected = await sync_to_async(run)()
    assert expected == "late start early"
    assert loaded == compacted == expected


async def test_stored_texts_agree_with_load_state_after_compaction(store: Any, note: Any) -> None:
    def run() -> tuple[str, str]:
        other = Elsewhere(note.doc_id)
        other.append(" one")
        persistence.compact(note.doc_id)
        other.append(" two")
        return persistence.stored_texts([note.doc_id])[note.doc_id], other.text

    texts, expected = await sync_to_async(run)()
    assert texts == expected == "start one two"
