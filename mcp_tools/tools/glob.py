from __future__ import annotations

from pydantic import BaseModel, Field

from lensrelay.models import Document
from mcp_tools.engines.globbing import NO_FILES, TRUNCATED_NOTE, compile_glob, glob_paths
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, ToolResult, tool


class GlobArgs(ToolArgs):
    pattern: str = Field(
        description="The glob pattern to match documents against (e.g. '**/*.md', 'Lens/*.md', 'Lens Edu/**')"
    )
    path: str | None = Field(
        default=None,
        description="Folder or sub-folder to search in (e.g. 'Lens', 'Lens/Notes'). Defaults to all folders.",
    )


def _mtimes(doc_ids: list[str]) -> dict[str, float]:
    rows = Document.objects.filter(doc_id__in=doc_ids).values_list("doc_id", "modified")
    return {doc_id: modified.timestamp() for doc_id, modified in rows}


class GlobOutput(BaseModel):
    paths: list[str]
    truncated: bool


@tool(
    name="glob",
    title="Find documents by pattern",
    description=(
        "Fast file pattern matching. Supports glob patterns like '**/*.md', 'Lens/Notes/*.md' or "
        "'**/*.{png,json,canvas}', braces and character classes. Lists every file: notes, images, PDFs, "
        "canvases, JSON, HTML. Returns matching paths sorted by modification time, newest first."
    ),
    args=GlobArgs,
    output=GlobOutput,
)
async def glob(ctx: ToolContext, args: GlobArgs) -> ToolResult:
    kb = await open_kb()
    entries = kb.visible(ctx, scope=args.path, files=True)  # every file, not only notes
    try:
        matches = compile_glob(args.pattern, scope=args.path)
    except ValueError as exc:
        raise ToolError(f"Error: {exc}") from exc
    # Modification times of the matches only, not of every visible document.
    entries = [e for e in entries if matches(e.user_path)]
    mtimes = await kb.store.db(_mtimes, [e.doc_id for e in entries])
    try:
        text = glob_paths(
            ((e.user_path, mtimes.get(e.doc_id, 0.0)) for e in entries), pattern=args.pattern, scope=args.path
        )
    except ValueError as exc:
        raise ToolError(f"Error: {exc}") from exc
    lines = [] if text == NO_FILES else text.split("\n")
    truncated = bool(lines) and lines[-1] == TRUNCATED_NOTE
    paths = lines[:-1] if truncated else lines
    notes = tuple(path for path in paths if path.endswith(".md"))
    return ToolResult(text, GlobOutput(paths=paths, truncated=truncated).model_dump(), notes)
