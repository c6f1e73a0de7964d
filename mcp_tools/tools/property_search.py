from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from lensrelay.text.frontmatter import document_stats, split_frontmatter
from mcp_tools.engines.properties import matches_properties, validate_property_query
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, ToolResult, tool


class PropertySearchArgs(ToolArgs):
    properties: dict[str, Any] = Field(
        description=(
            "Frontmatter properties to match; all keys must match (AND), a list value matches any of "
            'its items (OR). Example: {"status": "draft", "tags": ["urgent", "important"]}'
        )
    )
    path: str | None = Field(default=None, description="Folder or sub-folder to search in")
    limit: int = Field(default=50, ge=1, le=1000, description="Maximum results (default 50)")


class PropertyMatch(BaseModel):
    path: str
    frontmatter: dict[str, Any]
    word_count: int


class PropertySearchOutput(BaseModel):
    properties: dict[str, Any]
    matches: list[PropertyMatch]
    count: int


@tool(
    name="property_search",
    title="Find documents by frontmatter",
    description=(
        "Search documents by frontmatter properties (tags included): AND across keys, OR within a list. "
        "Returns JSON with each match's path, frontmatter and word count."
    ),
    args=PropertySearchArgs,
    output=PropertySearchOutput,
)
async def property_search(ctx: ToolContext, args: PropertySearchArgs) -> ToolResult:
    try:
        query = validate_property_query(args.properties)
    except ValueError as exc:
        raise ToolError(f"Error: {exc}") from exc
    kb = await open_kb()
    entries = kb.visible(ctx, scope=args.path)
    texts = await kb.view_texts(entries)
    matches: list[dict[str, Any]] = []
    for entry in entries:
        frontmatter, _, _ = split_frontmatter(texts[entry.doc_id])
        if frontmatter is not None and matches_properties(frontmatter, query):
            words = document_stats(texts[entry.doc_id])["words"]
            matches.append({"path": entry.user_path, "frontmatter": frontmatter, "word_count": words})
            if len(matches) >= args.limit:
                break
    result = {"properties": args.properties, "matches": matches, "count": len(matches)}
    links = tuple(match["path"] for match in matches)
    return ToolResult(json.dumps(result, ensure_ascii=False, indent=2), result, links)
