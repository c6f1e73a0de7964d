from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from lensrelay.models import Document
from lensrelay.text.frontmatter import document_stats, split_frontmatter
from mcp_tools.kb import open_kb, target_of
from mcp_tools.registry import ToolArgs, ToolContext, ToolResult, tool


class ReadMetadataArgs(ToolArgs):
    file_path: str = Field(description="Path to the document (e.g. 'Lens/Photosynthesis.md')")


class ReadMetadataOutput(BaseModel):
    path: str
    frontmatter: dict[str, Any]
    stats: dict[str, Any] = Field(
        description="words, characters, lines, headings, code_blocks, wikilinks, tasks, backlinks"
    )
    modified: str | None
    frontmatter_error: str | None = None


def _modified(doc_id: str) -> str | None:
    modified = Document.objects.filter(doc_id=doc_id).values_list("modified", flat=True).first()
    return modified.isoformat() if modified else None


@tool(
    name="read_metadata",
    title="Document metadata",
    description=(
        "Read a document's frontmatter and statistics (words, characters, headings, code blocks, "
        "wikilinks, backlinks, modified time) without its full content. Returns JSON."
    ),
    args=ReadMetadataArgs,
    output=ReadMetadataOutput,
)
async def read_metadata(ctx: ToolContext, args: ReadMetadataArgs) -> ToolResult:
    kb = await open_kb()
    entry = kb.resolve(ctx, args.file_path)
    text = await kb.view_text(entry)
    frontmatter, _, error = split_frontmatter(text)
    visible = kb.visible(ctx)
    texts = await kb.view_texts(visible)
    backlinks = kb.link_graph(ctx).backlinks(
        target_of(entry), {target_of(e): texts[e.doc_id] for e in visible}
    )
    result = {
        "path": entry.user_path,
        "frontmatter": frontmatter or {},
        "stats": {**document_stats(text), "backlinks": len(backlinks)},
        "modified": await kb.store.db(_modified, entry.doc_id),
    }
    if error:
        result["frontmatter_error"] = error
    return ToolResult(json.dumps(result, ensure_ascii=False, indent=2), result, (entry.user_path,))
