"""`search` results: full-text hits, blended with notes found by meaning when semantic search is on.

Without a model (or without the optional extra) this is exactly the full-text ranking. With one, notes
that match the words keep the lead, reordered by reciprocal rank fusion with the semantic ranking, and
notes found only by meaning follow (see lensrelay/semantic/ranking.py).
"""

from __future__ import annotations

import logging
from itertools import islice
from typing import Literal

from django.conf import settings
from pydantic import BaseModel, Field

from lensrelay.search.query import ParsedQuery
from lensrelay.search.rows import Hit, document_title
from lensrelay.semantic.config import semantic_enabled
from lensrelay.semantic.passages import PassageMatch
from lensrelay.semantic.ranking import fuse, semantic_ranking
from mcp_tools.engines.passages import passage_excerpt, passage_location
from mcp_tools.kb import KnowledgeBase
from mcp_tools.registry import ToolContext
from mcp_tools.tools.support.search_scope import SearchScope, notes_in_scope

logger = logging.getLogger(__name__)

# How deep each ranking is read before fusing.
FUSION_DEPTH = 50


class Found(BaseModel):
    """One result of `search` or `semantic_search`, as data; `render` is its text."""

    title: str
    path: str
    snippet: str
    match: Literal["words", "meaning"] = Field(description="Found by its words, or by meaning only")
    location: str | None = Field(default=None, description="Where the passage found by meaning is")

    def render(self) -> str:
        head = f"\n## {self.title} ({self.path})"
        if self.match == "words":
            return head + (f"\n{self.snippet}" if self.snippet else "")
        return f"{head}\n{self.snippet}\n(by meaning: {self.location})"


class SearchOutput(BaseModel):
    results: list[Found]


def full_text_depth(limit: int) -> int:
    return max(limit, FUSION_DEPTH) if semantic_enabled() else limit


def meaning_of(parsed: ParsedQuery) -> str:
    """The words a hybrid query means: the required terms, without operators or excluded words."""
    return " ".join(term.text for clause in parsed.required for term in clause.alternatives)


async def hybrid_results(
    ctx: ToolContext,
    kb: KnowledgeBase,
    scope: SearchScope,
    parsed: ParsedQuery,
    hits: list[Hit],
    *,
    limit: int,
) -> list[Found]:
    """The results, best first (each renders as `## title (path)` and a snippet)."""
    by_id = {hit.doc_id: hit for hit in hits}
    notes = notes_in_scope(ctx, kb, scope) if semantic_enabled() else {}
    try:
        ranking = await semantic_ranking(kb.store, query=meaning_of(parsed), doc_ids=notes) if notes else None
    except Exception:
        # Meaning is an extra: when the model fails, words still answer.
        logger.exception("semantic ranking failed; answering with full-text results only")
        ranking = None
    if ranking is None:
        return [_hit(hit) for hit in hits[:limit]]
    semantic = list(islice(ranking, FUSION_DEPTH))
    if parsed.excluded:  # excluding a word is about exact words: nothing is added by meaning alone
        semantic = [match for match in semantic if match.doc_id in by_id]
    fused = fuse(
        full_text=[hit.doc_id for hit in hits],
        semantic=semantic,
        min_score=settings.LENSRELAY_SEMANTIC_MIN_SCORE,
        limit=limit,
    )
    added = [item.match for item in fused if not item.full_text and item.match is not None]
    entries = [entry for match in added if (entry := kb.index.by_doc_id(match.doc_id)) is not None]
    texts = await kb.view_texts(entries)
    found: list[Found] = []
    for item in fused:
        if item.full_text:
            found.append(_hit(by_id[item.doc_id]))
        elif item.match is not None and item.doc_id in texts:
            found.append(by_meaning(notes[item.doc_id], texts[item.doc_id], item.match))
    return found


def _hit(hit: Hit) -> Found:
    return Found(title=hit.title, path=hit.user_path, snippet=hit.snippet or "", match="words")


def by_meaning(user_path: str, text: str, match: PassageMatch) -> Found:
    return Found(
        title=document_title(user_path),
        path=user_path,
        snippet=passage_excerpt(text, match),
        match="meaning",
        location=passage_location(match),
    )
