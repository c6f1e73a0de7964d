"""`search` results: full-text hits, blended with notes found by meaning when semantic search is on.

Without a model (or without the optional extra) this is exactly the full-text ranking. With one, notes
that match the words keep the lead, reordered by reciprocal rank fusion with the semantic ranking, and
notes found only by meaning follow (see lensrelay/semantic/ranking.py).
"""

from __future__ import annotations

import logging
from itertools import islice

from django.conf import settings

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
) -> list[str]:
    """The rendered results, best first: `## title (path)` and a snippet each."""
    by_id = {hit.doc_id: hit for hit in hits}
    notes = notes_in_scope(ctx, kb, scope) if semantic_enabled() else {}
    try:
        ranking = await semantic_ranking(kb.store, query=meaning_of(parsed), doc_ids=notes) if notes else None
    except Exception:
        # Meaning is an extra: when the model fails, words still answer.
        logger.exception("semantic ranking failed; answering with full-text results only")
        ranking = None
    if ranking is None:
        return [_render_hit(hit) for hit in hits[:limit]]
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
    blocks: list[str] = []
    for item in fused:
        if item.full_text:
            blocks.append(_render_hit(by_id[item.doc_id]))
        elif item.match is not None and item.doc_id in texts:
            blocks.append(_render_meaning(notes[item.doc_id], texts[item.doc_id], item.match))
    return blocks


def _render_hit(hit: Hit) -> str:
    return f"\n## {hit.title} ({hit.user_path})" + (f"\n{hit.snippet}" if hit.snippet else "")


def _render_meaning(user_path: str, text: str, match: PassageMatch) -> str:
    title = document_title(user_path)
    return (
        f"\n## {title} ({user_path})\n{passage_excerpt(text, match)}\n(by meaning: {passage_location(match)})"
    )
