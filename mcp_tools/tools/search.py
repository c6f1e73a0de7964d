from __future__ import annotations

from pydantic import Field

from lensrelay.search.index import SearchUnavailable, search_query
from lensrelay.search.maintain import search_catch_up
from lensrelay.search.query import QueryError, parse_query
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, ToolResult, tool
from mcp_tools.tools.support.hybrid import SearchOutput, full_text_depth, hybrid_results
from mcp_tools.tools.support.search_scope import require_query, search_scope

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


class SearchArgs(ToolArgs):
    query: str = Field(
        description=(
            'Words to look for. All words must match; use "exact phrase", prefix* , a OR b, and -word to '
            "exclude."
        )
    )
    path: str | None = Field(
        default=None,
        description="Folder or sub-folder to search in (e.g. 'Lens', 'Lens/Notes'). Defaults to all folders.",
    )
    limit: int = Field(
        default=DEFAULT_LIMIT,
        ge=1,
        le=MAX_LIMIT,
        description=f"Most results to return (default {DEFAULT_LIMIT})",
    )


@tool(
    name="search",
    title="Full-text search",
    description=(
        "Ranked full-text search over the knowledge base. Finds documents containing the words (any "
        "language, accents ignored where the database supports it), best matches first, with title "
        'matches ranked highest. Supports "exact phrases", prefix*, OR and -excluded words. Each result '
        "shows the document's path and a snippet with the matches in **bold**. When semantic search is "
        "on, notes that match by meaning are blended in (word matches stay first). Use grep for regular "
        "expressions or exact line numbers."
    ),
    args=SearchArgs,
    output=SearchOutput,
)
async def search(ctx: ToolContext, args: SearchArgs) -> ToolResult:
    require_query(args.query, noun="search query", empty='Give words to look for, e.g. "photosynthesis".')
    try:
        parsed = parse_query(args.query)
    except QueryError as exc:
        raise ToolError(f"Error: {exc}") from exc
    kb = await open_kb()
    scope = search_scope(ctx, kb, args.path)
    # Answers from the index as it is: changes a crashed process left unindexed are being found in the
    # background (started when the knowledge base was first opened; again here if that failed).
    search_catch_up(kb.store)
    try:
        hits = await kb.store.db(
            search_query,
            query=parsed,
            folder_ids=scope.folder_ids,
            path_prefix=scope.prefix,
            limit=full_text_depth(args.limit),
        )
    except SearchUnavailable as exc:
        raise ToolError(f"Error: {exc}. Use grep instead.") from exc
    results = await hybrid_results(ctx, kb, scope, parsed, hits, limit=args.limit)
    if not results:
        where = f" in {args.path.strip('/')}" if args.path else ""
        return ToolResult(f'No results for "{args.query}"{where}.', {"results": []})
    text = "\n".join([f"{len(results)} results:", *(found.render() for found in results)])
    data = SearchOutput(results=results)
    return ToolResult(text, data.model_dump(), tuple(found.path for found in results))
