from __future__ import annotations

from pydantic import Field

from mcp_tools.engines.catn import format_read
from mcp_tools.kb import accepted_text, open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.tools.support.files import read_file
from suggestions.selectors import pending_in_text, pending_rows


class ReadArgs(ToolArgs):
    file_path: str = Field(description="Path to the document, folder first (e.g. 'Lens/Photosynthesis.md')")
    offset: int | None = Field(
        default=None,
        description=(
            "The line number to start reading from. Only provide if the document is too large to read at once"
        ),
    )
    limit: int | None = Field(
        default=None,
        description="The number of lines to read. Only provide if the document is too large to read at once.",
    )


@tool(
    name="read",
    title="Read document",
    description=(
        "Reads a document from the knowledge base. Returns its content with line numbers (cat -n format), "
        "up to 2000 lines by default; use offset and limit for long documents. Shows the text as if "
        "pending suggestions were accepted. A document must be read before it can be edited. Text "
        "files (JSON, canvas, HTML, CSV, ...) are shown the same way; a binary file (image, PDF, ...) "
        "is described instead: its type, size, hash and the notes that link to or embed it."
    ),
    args=ReadArgs,
)
async def read(ctx: ToolContext, args: ReadArgs) -> str:
    kb = await open_kb()
    entry = kb.resolve(ctx, args.file_path)
    if not entry.is_markdown:
        return await read_file(ctx, kb, entry, offset=args.offset, limit=args.limit)
    raw = await kb.raw_text(entry)
    try:
        view = accepted_text(raw)
        output = format_read(view, offset=args.offset, limit=args.limit)
    except ValueError as exc:
        raise ToolError(f"Error: {exc}") from exc
    await ctx.record_read(entry.doc_id)
    rows = await kb.store.db(pending_rows, entry.doc_id) if view is not raw else []
    pending = pending_in_text(raw, rows) if view is not raw else []
    if pending:
        output += "\n\n[Pending suggestions]\n" + "\n".join(p.render() for p in pending)
    return output
