"""Keeping passage vectors current: changed notes are embedded again in the background.

- Content edits (here or in another process) are gathered for LENSRELAY_SEMANTIC_DEBOUNCE_SECONDS, then
  embedded in small batches: texts come from the text cache in the accepted view, the model runs on its
  own thread, and each batch is written in one short transaction, so update logging never waits long.
- Folder changes (renames, moves, deletions) arrive through `folder_changed` once the document rows are
  current: passages of deleted notes are removed at once, renamed or moved notes are embedded again.
- Each embedded document remembers the note's modified time when its text was read, so `ready` finds
  what changed while no process was listening, and a restart recomputes only that.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from lensrelay.docstore.derived import derived_debouncer
from lensrelay.docstore.later import Once
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache, view_of
from lensrelay.search.rows import document_title
from lensrelay.semantic.config import VIEW, configured_model
from lensrelay.semantic.embedder import embed_passages
from lensrelay.semantic.matrix import vector_matrix
from lensrelay.semantic.passages import Passage, split_passages
from lensrelay.semantic.vectors import (
    EmbeddedPassage,
    NoteRow,
    note_rows,
    passages_remove,
    passages_write,
    reusable_vectors,
    stale_notes,
)

logger = logging.getLogger(__name__)

# Notes per batch: small enough that a batch's transaction and model run stay short.
NOTES_PER_BATCH = 16

Split = list[tuple[NoteRow, list[tuple[Passage, str, str]]]]  # (passage, digest, embedding text)


def _split(rows: Sequence[NoteRow], raw: dict[str, str]) -> Split:
    notes: Split = []
    for row in rows:
        title = document_title(row.path)
        passages = split_passages(view_of(raw[row.doc_id]))
        notes.append((row, [(p, p.digest(title), p.embedding_text(title)) for p in passages]))
    return notes


class SemanticMaintainer:
    """Per store: the notes embedded, and the comparisons with the document rows (the notes to embed are
    gathered by the derived view's debouncer, lensrelay.semantic.listen)."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self._ready = Once(store)

    def schedule(self, doc_ids: Iterable[str]) -> None:
        derived_debouncer(self.store, VIEW).add(*doc_ids)

    async def settled(self) -> None:
        """Wait until every scheduled note is embedded (tests, benchmarks, shutdown)."""
        await derived_debouncer(self.store, VIEW).settled()

    async def embed(self, doc_ids: Iterable[str]) -> None:
        """Embed these notes now, in batches; ids that are no longer notes lose their passages."""
        ids = sorted(set(doc_ids))
        for start in range(0, len(ids), NOTES_PER_BATCH):
            await self._embed_batch(ids[start : start + NOTES_PER_BATCH])

    async def _embed_batch(self, ids: list[str]) -> None:
        model = configured_model()
        if not model:
            return  # switched off meanwhile
        # Rows first: their modified time predates the text read, so a later edit is never masked.
        rows = await self.store.db(note_rows, doc_ids=ids)
        present = {row.doc_id for row in rows}
        if await self.store.db(passages_remove, doc_ids=[doc_id for doc_id in ids if doc_id not in present]):
            vector_matrix(self.store).mark_stale()
        raw = await text_cache(self.store).get_many(present)
        notes = await asyncio.to_thread(_split, rows, raw)
        vectors = await self.store.db(reusable_vectors, doc_ids=present, model=model)
        todo = {
            digest: text for _, passages in notes for _, digest, text in passages if digest not in vectors
        }
        if todo:
            computed = await embed_passages(model, list(todo.values()))
            vectors.update(zip(todo, (row.tobytes() for row in computed), strict=True))
        written = [
            (row, [EmbeddedPassage(passage=p, digest=d, vector=vectors[d]) for p, d, _ in passages])
            for row, passages in notes
        ]
        await self.store.db(passages_write, model=model, notes=written)
        vector_matrix(self.store).mark_stale()

    async def folder_changed(self, folder_id: int | None) -> None:
        outdated, gone = await self.store.db(stale_notes, folder_id=folder_id, model=configured_model())
        if await self.store.db(passages_remove, doc_ids=gone):
            vector_matrix(self.store).mark_stale()
        derived_debouncer(self.store, VIEW).discard(*gone)
        self.schedule(outdated)

    async def ready(self) -> None:
        """Once per process: compare every note with its vectors and schedule what is stale."""
        await self._ready.run(lambda: self.folder_changed(None))


def maintainer_for(store: DocStore) -> SemanticMaintainer:
    return store.attached(SemanticMaintainer)
