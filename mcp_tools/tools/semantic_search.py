from __future__ import annotations

import logging
from typing import Any

from pydantic import Field

from lensrelay.search.rows import document_title
from lensrelay.semantic.config import semantic_enabled
from lensrelay.semantic.ranking import semantic_ranking
from lensrelay.text.frontmatter import split_frontmatter
from mcp_tools.engines.passages import passage_excerpt, passage_location
from mcp_tools.engines.properties import matches_properties, validate_property_query
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, ToolResult, tool
from mcp_tools.tools.support.hybrid import Found, SearchOutput, by_meaning
from mcp_tools.tools.support.search_scope import notes_in_scope, require_query, search_scope

logger = logging.getLogger(__name__)


class SemanticSearchArgs(ToolArgs):
    query: str = Field(
        description="What you are looking for, in plain words (e.g. 'project planning techniques')"
    )
    path: str | None = Field(default=None, description="Folder, sub-folder or document to search in")
    limit: int = Field(default=10, ge=1, le=100, description="Most results to return (default 10)")
    filters: dict[str, Any] | None = Field(
        default=None,
        description='Frontmatter the notes must have, as in property_search: {"tags": ["project"]}',
    )


@tool(
    name="semantic_search",
    title="Find notes by meaning",
    description=(
        "Finds notes whose meaning is closest to the query, even when they share no word with it. Each "
        "result shows the path, a similarity score and the best-matching passage with its line numbers "
        "(open it with read's offset and limit). Use search for exact words, grep for patterns."
    ),
    args=SemanticSearchArgs,
    output=SearchOutput,
    offered_when=semantic_enabled,
)
async def semantic_search(ctx: ToolContext, args: SemanticSearchArgs) -> ToolResult:
    require_query(args.query, noun="query", empty="Describe what you are looking for.")
    try:
        filters = validate_property_query(args.filters) if args.filters is not None else None
    except ValueError as exc:
        raise ToolError(f"Error: {exc}") from exc
    kb = await open_kb()
    notes = notes_in_scope(ctx, kb, search_scope(ctx, kb, args.path))
    try:
        ranking = await semantic_ranking(kb.store, query=args.query, doc_ids=notes)
    except Exception as exc:
        logger.exception("semantic search failed")
        raise ToolError("Error: Semantic search failed on the server. Use search instead.") from exc
    if ranking is None:
        raise ToolError("Error: Semantic search is not enabled on this server. Use search instead.")
    blocks: list[str] = []
    found: list[Found] = []
    for match in ranking:
        entry = kb.index.by_doc_id(match.doc_id)
        if entry is None:
            continue
        text = await kb.view_text(entry)
        if filters is not None and not matches_properties(split_frontmatter(text)[0], filters):
            continue
        title = document_title(entry.path)
        found.append(by_meaning(entry.user_path, text, match))
        blocks.append(
            f"\n## {title} ({entry.user_path})\n{passage_location(match)}\n{passage_excerpt(text, match)}"
        )
        if len(blocks) >= args.limit:
            break
    if not blocks:
        where = f" in {args.path.strip('/')}" if args.path else ""
        return ToolResult(f'No results for "{args.query}"{where}.', {"results": []})
    text = "\n".join([f"{len(blocks)} results:", *blocks])
    return ToolResult(text, SearchOutput(results=found).model_dump(), tuple(f.path for f in found))
