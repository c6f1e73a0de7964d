"""Ranking by meaning for the tools, and its fusion with full-text ranking for hybrid search.

Safe to import without the optional extra: `semantic_ranking` answers None when semantic search is off.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from lensrelay.docstore.store import DocStore
from lensrelay.semantic.config import semantic_enabled
from lensrelay.semantic.listen import semantic_ready
from lensrelay.semantic.passages import PassageMatch

# The usual reciprocal-rank-fusion constant: rank differences near the top matter, far down they fade.
RRF_K = 60


async def semantic_ranking(
    store: DocStore, *, query: str, doc_ids: Collection[str]
) -> Iterator[PassageMatch] | None:
    """The allowed notes by meaning, best first; None when semantic search is off."""
    if not semantic_enabled():
        return None
    # Imported here: it needs NumPy and the model, which only the optional extra installs.
    from lensrelay.semantic.lookup import ranked_notes

    await semantic_ready(store)
    return await ranked_notes(store, query=query, doc_ids=doc_ids)


@dataclass(frozen=True)
class Fused:
    doc_id: str
    full_text: bool  # found by its words (then the full-text snippet shows why)
    match: PassageMatch | None


def fuse(
    *, full_text: Sequence[str], semantic: Sequence[PassageMatch], min_score: float, limit: int
) -> list[Fused]:
    """Hybrid order: notes that match the words first, reordered among themselves by reciprocal rank
    fusion of both rankings; then notes found only by meaning, when similar enough.

    Putting word matches first keeps exact words winning where they exist; meaning decides among them
    and fills in when words find little or nothing.
    """
    by_meaning = {match.doc_id: (rank, match) for rank, match in enumerate(semantic, start=1)}

    def fused(item: tuple[int, str]) -> float:
        rank, doc_id = item
        meaning = by_meaning.get(doc_id)
        return 1 / (RRF_K + rank) + (1 / (RRF_K + meaning[0]) if meaning else 0.0)

    worded = sorted(enumerate(full_text, start=1), key=lambda item: (-fused(item), item[0]))
    results = [Fused(doc_id, True, by_meaning.get(doc_id, (0, None))[1]) for _, doc_id in worded]
    found = set(full_text)
    results += [
        Fused(match.doc_id, False, match)
        for match in semantic
        if match.doc_id not in found and match.score >= min_score
    ]
    return results[:limit]
