"""Vectors follow the notes: edits after the debounce, renames, moves, deletions, restarts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pycrdt import Doc, Text

from lensrelay.docstore import folderdoc, persistence
from lensrelay.docstore.offsets import text_insert, text_replace
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import CONTENTS
from lensrelay.models import Folder
from lensrelay.semantic import maintain
from lensrelay.semantic.lookup import ranked_notes
from lensrelay.semantic.matrix import vector_matrix
from lensrelay.semantic.models import EmbeddedDocument, Passage
from lensrelay.semantic.passages import split_passages
from lensrelay.semantic.vectors import NoteRow, passages_write
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create, folder_settled
from lensrelay.vault.moves import FolderRef, move_entries
from suggestions.markup.accepted_view import accepted_text
from tests.lensrelay.semantic.helpers import semantic, settle

__all__ = ["semantic"]

pytestmark = pytest.mark.django_db(transaction=True)

SPRINTS = (
    "# Sprints\n\nWe work in two-week cycles with a backlog.\n\n"
    "## Retrospective\n\nWhat went well, what to change.\n"
)
BREAD = "# Starter\n\nFeed the jar of flour every day until it bubbles.\n"


class Embedded:
    """Records what the background work sends to the model."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        original = maintain.embed_passages

        async def recording(name: str, texts: Any) -> Any:
            self.texts += list(texts)
            return await original(name, texts)

        monkeypatch.setattr(maintain, "embed_passages", recording)


def stored(doc_id: str) -> list[tuple[int, int, str, bytes]]:
    rows = Passage.objects.filter(document__doc_id=doc_id).order_by("ordinal")
    return [(p.start_line, p.end_line, p.digest, bytes(p.vector)) for p in rows]


async def top(store: DocStore, query: str, doc_ids: Any) -> list[str]:
    return [match.doc_id for match in await ranked_notes(store, query=query, doc_ids=doc_ids)]


async def replace_text(store: DocStore, doc_id: str, new: str) -> None:
    room = await store.get(doc_id)
    assert room is not None
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        text_replace(ytext, current=str(ytext), start=0, end=len(str(ytext)), value=new)
    await room.flushed()


async def test_an_edit_changes_the_vectors_after_the_debounce_and_only_the_edited_section(
    store: Any, semantic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await store.db(folder_create, name="Team")
    doc = await document_create(store=store, folder=folder, path="/Sprints.md", text=SPRINTS)
    await settle(store)
    before = await store.db(stored, doc.doc_id)
    assert [(start, end) for start, end, _, _ in before] == [(1, 3), (5, 7)]

    semantic.LENSRELAY_SEMANTIC_DEBOUNCE_SECONDS = 0.4
    embedded = Embedded(monkeypatch)
    edited = SPRINTS.replace("What went well, what to change.", "We bake sourdough bread together.")
    started = time.monotonic()
    await replace_text(store, doc.doc_id, edited)
    await asyncio.sleep(0.2)
    assert await store.db(stored, doc.doc_id) == before  # still debouncing
    await settle(store)
    assert time.monotonic() - started >= 0.4
    after = await store.db(stored, doc.doc_id)
    assert after[0] == before[0]  # the untouched section kept its vector
    assert after[1][2] != before[1][2] and after[1][3] != before[1][3]
    assert embedded.texts == [
        "Sprints > Retrospective\n## Retrospective\n\nWe bake sourdough bread together."
    ]
    assert (await top(store, "baking loaves of bread", {doc.doc_id}))[0] == doc.doc_id


async def test_deletions_renames_and_moves_leave_no_stale_passage(store: Any, semantic: Any) -> None:
    team = await store.db(folder_create, name="Team")
    home = await store.db(folder_create, name="Home")
    sprints = await document_create(store=store, folder=team, path="/Sprints.md", text=SPRINTS)
    doomed = await document_create(
        store=store, folder=team, path="/Doomed.md", text="A note about tax receipts.\n"
    )
    bread = await document_create(store=store, folder=team, path="/Starter.md", text=BREAD)
    await settle(store)
    assert await store.db(EmbeddedDocument.objects.count) == 3

    team_room, home_room = await store.get(team.doc_id), await store.get(home.doc_id)
    with team_room.transact():
        folderdoc.remove_entry(team_room.doc, path="/Doomed.md")
        folderdoc.move_entry(team_room.doc, old="/Sprints.md", new="/Process/How we work.md")
    await team_room.flushed()
    # Across folders only through the move service: a folder document cannot take another's note.
    await move_entries(
        store,
        source=FolderRef(id=team.pk, name=team.name, doc_id=team.doc_id),
        target=FolderRef(id=home.pk, name=home.name, doc_id=home.doc_id),
        old="/Starter.md",
        new="/Kitchen/Starter.md",
        folder=False,
    )
    await home_room.flushed()
    await folder_settled()
    # Deletion removes the passages at once, without waiting for any debounce.
    assert not await store.db(lambda: Passage.objects.filter(document__doc_id=doomed.doc_id).exists())
    await settle(store)

    embedded = await store.db(
        lambda: {e.doc_id: (e.folder_id, e.path) for e in EmbeddedDocument.objects.all()}
    )
    assert embedded == {
        sprints.doc_id: (team.pk, "/Process/How we work.md"),
        bread.doc_id: (home.pk, "/Kitchen/Starter.md"),
    }
    orphans = await store.db(lambda: Passage.objects.exclude(document__doc_id__in=list(embedded)).count())
    assert orphans == 0
    matrix = vector_matrix(store)
    await matrix.refresh(semantic.LENSRELAY_SEMANTIC_MODEL)
    assert len(matrix) == await store.db(Passage.objects.count)
    assert await top(store, "tax receipts", {doomed.doc_id, sprints.doc_id}) == [sprints.doc_id]


async def test_a_restart_recomputes_nothing_and_catches_up_on_what_changed_meanwhile(
    store: Any, semantic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await store.db(folder_create, name="Team")
    one = await document_create(store=store, folder=folder, path="/Sprints.md", text=SPRINTS)
    two = await document_create(store=store, folder=folder, path="/Starter.md", text=BREAD)
    await settle(store)
    vectors = await store.db(stored, one.doc_id)

    restarted = DocStore(asyncio.get_running_loop())  # a new process: no rooms, no caches, no matrix
    try:
        embedded = Embedded(monkeypatch)
        await settle(restarted)
        assert embedded.texts == []
        assert await restarted.db(stored, one.doc_id) == vectors
        assert (await top(restarted, "agile iteration planning", {one.doc_id, two.doc_id}))[0] == one.doc_id

        # A change logged while no process embedded it (a process that exited) is found at the next start.
        await restarted.db(
            persistence.append_update,
            two.doc_id,
            await appended(store, two.doc_id),
            is_content=True,
            writer=store.writer,  # so the first store, still running, takes it for its own and skips it
        )
        again = DocStore(asyncio.get_running_loop())
        try:
            await settle(again)
            assert embedded.texts == [
                "Starter\n# Starter\n\nFeed the jar of flour every day until it bubbles. Rye works best."
            ]
            assert await again.db(stored, one.doc_id) == vectors
        finally:
            await again.close()
    finally:
        await restarted.close()


async def appended(store: DocStore, doc_id: str) -> bytes:
    """An update adding a sentence to the note, made on a copy (as another process would)."""
    room = await store.get(doc_id)
    assert room is not None
    copy: Doc[Any] = Doc()
    copy.apply_update(room.doc.get_update())
    before = copy.get_state()
    ytext = copy.get(CONTENTS, type=Text)
    text_insert(ytext, current=str(ytext), index=len(str(ytext)) - 1, value=" Rye works best.")
    return copy.get_update(before)


async def test_only_the_accepted_view_is_embedded(store: Any, semantic: Any) -> None:
    folder = await store.db(folder_create, name="Team")
    raw = (
        '---\ntags: [x]\n---\n# Cell\n\nThe {--{"author":"ai"}@@nucleus--}{++nucleolus++} makes ribosomes.\n'
    )
    doc = await document_create(store=store, folder=folder, path="/Cell.md", text=raw)
    await settle(store)
    view = accepted_text(raw)
    expected = [(p.start_line, p.end_line, p.digest("Cell")) for p in split_passages(view)]
    assert [(s, e, d) for s, e, d, _ in await store.db(stored, doc.doc_id)] == expected
    assert "{++" not in view and "nucleolus" in view and expected[0][0] == 4  # frontmatter left out


async def test_a_note_deleted_while_it_was_being_embedded_leaves_nothing(store: Any, semantic: Any) -> None:
    folder = await store.db(folder_create, name="Team")
    doc = await document_create(store=store, folder=folder, path="/Gone.md", text=BREAD)
    await settle(store)
    row = NoteRow(doc_id=doc.doc_id, folder_id=folder.pk, path="/Gone.md", modified=time.time())
    await store.db(lambda: Folder.objects.get(pk=folder.pk).documents.all().delete())
    await store.db(passages_write, model="m", notes=[(row, [])])
    assert await store.db(EmbeddedDocument.objects.count) == 0
    assert await store.db(Passage.objects.count) == 0


async def test_nothing_happens_without_a_model(store: Any, settings: Any) -> None:
    settings.LENSRELAY_SEMANTIC_MODEL = ""
    folder = await store.db(folder_create, name="Team")
    doc = await document_create(store=store, folder=folder, path="/Sprints.md", text=SPRINTS)
    await replace_text(store, doc.doc_id, SPRINTS + "more\n")
    await settle(store)
    assert await store.db(EmbeddedDocument.objects.count) == 0
    assert maintain.SemanticMaintainer not in store._attached
