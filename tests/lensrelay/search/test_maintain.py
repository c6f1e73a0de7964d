"""The index follows the live store: edits, creations, renames, deletions, other processes, restarts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from django.core.management import call_command
from pycrdt import Doc, Text

from lensrelay.docstore import folderdoc, persistence
from lensrelay.docstore.derived import derive_pending, follower_for
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.texts import CONTENTS, text_cache
from lensrelay.models import Document, Folder
from lensrelay.search import maintain
from lensrelay.search.index import search_clear, search_indexed, search_query
from lensrelay.search.maintain import search_ready, search_reindex_all, search_settled
from lensrelay.search.rows import Hit
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create, folder_settled
from tests.editing import append_text
from tests.lensrelay.search.helpers import eventually

pytestmark = pytest.mark.django_db(transaction=True)


async def find(store: Any, query: str, **scope: Any) -> list[Hit]:
    return await store.db(search_query, query=query, folder_ids=scope.get("folder_ids"), limit=20)


async def user_paths(store: Any, query: str) -> list[str]:
    return [hit.user_path for hit in await find(store, query)]


async def make(store: Any, name: str = "Lens") -> Folder:
    return await store.db(folder_create, name=name)


def reindexes_recorded(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """The documents of each reindex from now on, in order."""
    calls: list[set[str]] = []
    original = maintain.SearchMaintainer.reindex

    async def recording(self: Any, doc_ids: Any) -> None:
        calls.append(set(doc_ids))
        await original(self, doc_ids)

    monkeypatch.setattr(maintain.SearchMaintainer, "reindex", recording)
    return calls


async def test_an_edit_through_the_store_is_searchable_within_a_second(store: Any) -> None:
    folder = await make(store)
    doc = await document_create(
        store=store, folder=folder, path="/Notes/Cell.md", text="The cell membrane.\n"
    )
    await append_text(store, doc.doc_id, "Ribosomes make proteins.\n")

    async def found() -> bool:
        return await user_paths(store, "ribosomes") == ["Lens/Notes/Cell.md"]

    took = await eventually(found, within=1.5)
    assert took < 1.2
    [hit] = await find(store, "ribosomes")
    assert "**Ribosomes**" in hit.snippet


async def test_a_burst_of_edits_is_indexed_in_few_batches(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await make(store)
    doc = await document_create(store=store, folder=folder, path="/Burst.md", text="start\n")
    calls = reindexes_recorded(monkeypatch)
    start = time.monotonic()
    for i in range(20):
        await append_text(store, doc.doc_id, f"word{i} ")
    typing = time.monotonic() - start
    await search_settled(store)
    # One reindex per debounce window while the edits last, not one per edit.
    assert 1 <= len(calls) <= int(typing / maintain.DEBOUNCE_SECONDS) + 2
    assert len(calls) < 20
    assert await user_paths(store, "word19") == ["Lens/Burst.md"]


async def test_a_created_document_is_searchable_when_create_returns(store: Any) -> None:
    folder = await make(store)
    await document_create(store=store, folder=folder, path="/Golgi.md", text="Packages proteins.")
    assert await user_paths(store, "packages") == ["Lens/Golgi.md"]
    assert await user_paths(store, "golgi") == ["Lens/Golgi.md"]  # the title is searchable too


async def test_renames_and_deletions_follow_the_folder_document(store: Any) -> None:
    folder = await make(store)
    await document_create(store=store, folder=folder, path="/Old Name.md", text="about lysosomes")
    await document_create(store=store, folder=folder, path="/Doomed.md", text="about vesicles")
    folder_room = await store.get(folder.doc_id)
    with folder_room.transact():
        folderdoc.move_entry(folder_room.doc, old="/Old Name.md", new="/Archive/Digestion.md")
        folderdoc.remove_entry(folder_room.doc, path="/Doomed.md")
    await folder_room.flushed()
    await folder_settled()

    [hit] = await find(store, "lysosomes")
    assert (hit.user_path, hit.title) == ("Lens/Archive/Digestion.md", "Digestion")
    assert await user_paths(store, "digestion") == ["Lens/Archive/Digestion.md"]
    assert await user_paths(store, "old") == []
    assert await user_paths(store, "vesicles") == []
    assert len(await store.db(search_indexed, folder_id=folder.pk)) == 1


async def test_search_sees_pending_suggestions_as_accepted(store: Any) -> None:
    folder = await make(store)
    text = "The {--nucleus--}{++nucleolus++} makes ribosomes.{>>check this<<}"
    await document_create(store=store, folder=folder, path="/Suggested.md", text=text)
    assert await user_paths(store, "nucleolus") == ["Lens/Suggested.md"]
    assert await user_paths(store, "nucleus") == []
    [hit] = await find(store, "ribosomes")
    assert "{++" not in hit.snippet and "check this" not in hit.snippet


async def test_a_change_from_another_process_is_indexed(store: Any) -> None:
    folder = await make(store)
    doc = await document_create(store=store, folder=folder, path="/Shared.md", text="original text")
    room = store.rooms.pop(doc.doc_id)  # as if this process had unloaded it
    room.close()
    other: Doc[Any] = Doc()
    other.apply_update(room.doc.get_update())
    before = other.get_update()
    ytext = other.get(CONTENTS, type=Text)
    text_insert(ytext, current=str(ytext), index=len(str(ytext)), value=" plus chromatin")
    update = _diff(other, before)
    await store.db(persistence.append_update, doc.doc_id, update, is_content=True, writer="another-process")
    await store.catch_up()

    async def found() -> bool:
        return await user_paths(store, "chromatin") == ["Lens/Shared.md"]

    await eventually(found, within=1.5)


def _diff(doc: Doc[Any], before: bytes) -> bytes:
    base: Doc[Any] = Doc()
    base.apply_update(before)
    return doc.get_update(base.get_state())


async def test_first_search_catches_up_with_changes_nobody_indexed(store: Any) -> None:
    folder = await make(store)
    one = await document_create(store=store, folder=folder, path="/One.md", text="centriole")
    await document_create(store=store, folder=folder, path="/Two.md", text="centriole too")
    # Nothing of the creations still scheduled (it indexed Two after the clear once in CI), and no log poll
    # to notice the write below before the first search does.
    await search_settled(store)
    store.poll_seconds = 3600
    await store.db(search_clear)
    # Written straight to the log, as a process that exited before indexing would leave it.
    room = await store.get(one.doc_id)
    before = room.doc.get_update()
    copy: Doc[Any] = Doc()
    copy.apply_update(before)
    ytext = copy.get(CONTENTS, type=Text)
    text_insert(ytext, current=str(ytext), index=0, value="cytoskeleton ")
    store.rooms.pop(one.doc_id).close()
    text_cache(store).invalidate(one.doc_id)  # a restarted process starts with no texts in memory
    await store.db(persistence.append_update, one.doc_id, _diff(copy, before), is_content=True, writer="gone")

    assert await user_paths(store, "centriole") == []
    await search_ready(store)
    assert sorted(await user_paths(store, "centriole")) == ["Lens/One.md", "Lens/Two.md"]
    assert await user_paths(store, "cytoskeleton") == ["Lens/One.md"]


async def test_full_reindex_and_its_command(store: Any) -> None:
    folder = await make(store)
    await document_create(store=store, folder=folder, path="/A.md", text="peroxisome {++added++}")
    await document_create(store=store, folder=folder, path="/B.md", text="peroxisome again")
    await store.db(search_clear)
    assert await store.db(search_reindex_all) == 2
    assert sorted(await user_paths(store, "peroxisome")) == ["Lens/A.md", "Lens/B.md"]
    assert await user_paths(store, "added") == ["Lens/A.md"]
    await store.db(Document.objects.filter(path="/B.md").delete)
    await store.db(call_command, "search_reindex", stdout=_Sink())
    indexed = await store.db(lambda: set(search_indexed()))
    assert indexed == await store.db(lambda: set(Document.objects.values_list("doc_id", flat=True)))
    assert len(indexed) == 1


class _Sink:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


async def test_indexing_is_quick_for_a_vault_import(store: Any, tmp_path: Any) -> None:
    from lensrelay.vault.importexport import import_vault

    for i in range(300):
        (tmp_path / f"note {i:03}.md").write_text(f"# Note {i}\nshared word and unique{i}\n")
    start = time.monotonic()
    await import_vault(store=store, root=tmp_path, folder_name="Bulk")
    took = time.monotonic() - start
    assert await user_paths(store, "unique123") == ["Bulk/note 123.md"]
    assert len(await find(store, "shared")) == 20
    assert took < 30


async def test_with_a_derive_process_a_note_typed_into_on_every_pass_is_rewritten_once_per_interval(
    store: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row is replaced whole (the note's old text and its new one tokenized): a note changed on every pass
    is rewritten every LENSRELAY_SEARCH_REWRITE_SECONDS, a note changed once in the next pass, and the last
    change always, without another pass (issue 36)."""
    settings.LENSRELAY_DERIVED_WORK = "process"
    settings.LENSRELAY_SEARCH_REWRITE_SECONDS = 0.8
    written = reindexes_recorded(monkeypatch)  # before the maintainer exists: it keeps the method
    folder = await make(store)
    typed = await document_create(store=store, folder=folder, path="/Typed.md", text="start\n")
    other = await document_create(store=store, folder=folder, path="/Other.md", text="quiet\n")
    await derive_pending(store)
    await asyncio.sleep(0.9)  # the creations' rows are older than the interval
    written.clear()
    follower = follower_for(store)
    await append_text(store, typed.doc_id, "alphaword ")
    await follower.step()
    assert await user_paths(store, "alphaword") == ["Lens/Typed.md"]
    await append_text(store, typed.doc_id, "betaword ")
    await follower.step()
    await append_text(store, other.doc_id, "gammaword ")
    await follower.step()
    assert await user_paths(store, "gammaword") == ["Lens/Other.md"]
    assert await user_paths(store, "betaword") == []  # owed, not lost
    assert written == [{typed.doc_id}, {other.doc_id}]
    took = await eventually(lambda: _found(store, "betaword", "Lens/Typed.md"), within=2.0)
    assert took < 1.5
    assert written == [{typed.doc_id}, {other.doc_id}, {typed.doc_id}]


async def test_a_derive_process_that_stops_writes_the_rows_it_owes(store: Any, settings: Any) -> None:
    settings.LENSRELAY_DERIVED_WORK = "process"
    settings.LENSRELAY_SEARCH_REWRITE_SECONDS = 3600.0
    folder = await make(store)
    note = await document_create(store=store, folder=folder, path="/Note.md", text="start\n")
    await derive_pending(store)
    await append_text(store, note.doc_id, "deltaword ")
    follower = follower_for(store)
    await follower.step()
    assert await user_paths(store, "deltaword") == []
    assert maintain.maintainer_for(store).spaced.waiting == {note.doc_id}
    await follower.do_owed()  # what `manage.py derive` does once its passes have stopped
    assert await user_paths(store, "deltaword") == ["Lens/Note.md"]


async def _found(store: Any, word: str, path: str) -> bool:
    return await user_paths(store, word) == [path]


async def test_a_passs_rows_are_its_markdown_notes_outside_the_trash_with_their_modified_times(
    store: Any,
) -> None:
    folder = await make(store)
    notes = [await document_create(store=store, folder=folder, path=f"/n{n}.md", text="x") for n in range(3)]
    await store.db(Document.objects.filter(doc_id=notes[1].doc_id).update, path="/_trash/n1.md")
    await store.db(Document.objects.filter(doc_id=notes[2].doc_id).update, type="image")
    asked = [note.doc_id for note in notes] + ["unknown", "x' OR '1'='1"]
    rows = await store.db(maintain._markdown_rows, doc_ids=asked)
    assert [row.doc_id for row in rows] == [notes[0].doc_id]
    stored = await store.db(Document.objects.get, doc_id=notes[0].doc_id)
    assert (rows[0].folder_id, rows[0].path, rows[0].modified) == (
        folder.pk,
        "/n0.md",
        stored.modified.timestamp(),
    )
    assert [row.doc_id for row in await store.db(maintain._markdown_rows)] == [notes[0].doc_id]
