"""Answering a query by meaning: embed it, refresh the matrix, rank the allowed notes."""

from __future__ import annotations

from collections.abc import Collection, Iterator

from lensrelay.docstore.store import DocStore
from lensrelay.semantic.config import configured_model
from lensrelay.semantic.embedder import embed_query
from lensrelay.semantic.matrix import vector_matrix
from lensrelay.semantic.passages import PassageMatch


async def ranked_notes(store: DocStore, *, query: str, doc_ids: Collection[str]) -> Iterator[PassageMatch]:
    model = configured_model()
    matrix = vector_matrix(store)
    await matrix.refresh(model)
    _, vector = await embed_query(query)
    return matrix.best_per_document(vector, frozenset(doc_ids))
