"""The `get_url` tool: a link a person can open to see a document in the browser editor."""

from __future__ import annotations

from pydantic import BaseModel, Field

from lensrelay.text.lines import line_count
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, ToolResult, tool
from mcp_tools.tools.support.urls import editor_path, public_base
from suggestions.lifecycle.filetext import file_content, file_view
from suggestions.markup.accepted_view import build_accepted_view


class GetUrlArgs(ToolArgs):
    file_path: str = Field(description="Path to the document (e.g. 'Lens/Photosynthesis.md')")
    line: int | None = Field(
        default=None,
        ge=1,
        description="Optional line number, as read numbers the lines (from 1): the link opens at that line",
    )


class GetUrlOutput(BaseModel):
    url: str = Field(description="The link; absolute when this server's address is known, else a path")
    file_path: str
    line: int | None = Field(description="The line asked for, as read numbers it")
    absolute: bool


@tool(
    name="get_url",
    title="Link to a document",
    description=(
        "Returns a link that opens a document in Lens Relay's browser editor, for a person signed in to "
        "it: share it when you want someone to look at a note, a passage or your suggestion. With line "
        "(numbered as read shows the lines) the link points at that line."
    ),
    args=GetUrlArgs,
    output=GetUrlOutput,
)
async def get_url(ctx: ToolContext, args: GetUrlArgs) -> ToolResult:
    kb = await open_kb()
    entry = kb.resolve(ctx, args.file_path)
    path = editor_path(entry.doc_id)
    anchor = ""
    where = ""
    if args.line is not None:
        if entry.is_markdown:
            raw = await kb.raw_text(entry)
            raw_line = _raw_line(raw, args.line, user_path=entry.user_path)
        else:
            content = await file_content(kb.store, entry)
            view = await file_view(kb.store, content)
            if view is None:
                raise ToolError(
                    f"Error: {entry.user_path} is a binary file ({entry.type}): it has no lines. "
                    "Call get_url without line."
                )
            _check_line(args.line, line_count(view), user_path=entry.user_path)
            raw_line = args.line
        anchor = f"#L{raw_line}"
        where = f" at line {args.line}"
        if raw_line != args.line:
            where += f" (line {raw_line} of its text with the suggestions' markup, as the editor numbers it)"
    base = public_base(ctx)
    url = f"{base}{path}{anchor}" if base else f"{path}{anchor}"
    lines = [url, f"Opens {entry.user_path}{where} in the browser editor (for a person signed in)."]
    if not base:
        lines.append(
            "This server's public address is not configured (LENSRELAY_PUBLIC_URL), so the link is a path: "
            "put the address people open Lens Relay at before it."
        )
    data = GetUrlOutput(url=url, file_path=entry.user_path, line=args.line, absolute=bool(base))
    return ToolResult("\n".join(lines), data.model_dump())


def _check_line(line: int, total: int, *, user_path: str) -> None:
    if line > total:
        size = "is empty" if total == 0 else f"has {total} line{'s' if total != 1 else ''}"
        raise ToolError(
            f"Error: line {line} is past the end of {user_path}: it {size}"
            + ("." if total == 0 else f". Use a line from 1 to {total}.")
        )


def _raw_line(raw: str, line: int, *, user_path: str) -> int:
    """The line of the stored text (suggestions' markup included, as the editor shows it) where line
    `line` of the accepted view (what read shows) starts."""
    view = build_accepted_view(raw)
    text = view.text
    _check_line(line, line_count(text), user_path=user_path)
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return raw.count("\n", 0, view.to_raw(start, prefer="right")) + 1
