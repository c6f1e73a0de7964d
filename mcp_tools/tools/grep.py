from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import Field

from lensrelay.vault.paths import DocEntry
from mcp_tools.engines.globbing import grep_glob_filter
from mcp_tools.engines.grep import GrepError, GrepOptions, GrepTimeout, grep_result
from mcp_tools.kb import KnowledgeBase, open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.tools.support.files import admitted_by_type, file_docs, grep_type_filter

GREP_TIMEOUT_SECONDS = 2.0


class GrepArgs(ToolArgs):
    pattern: str = Field(description="The regular expression pattern to search for in document contents")
    path: str | None = Field(
        default=None, description="Folder, sub-folder or document to search in. Defaults to all folders."
    )
    glob: str | None = Field(
        default=None, description="Glob pattern to filter files (e.g. '**/Notes/*.md', '**/*.json')"
    )
    type: str | None = Field(
        default=None,
        description="File type to search, as ripgrep's --type: md, json, canvas, html, txt, csv, yaml, ...",
    )
    output_mode: Literal["content", "files_with_matches", "count"] = Field(
        default="files_with_matches",
        description=(
            'Output mode: "content" shows matching lines, "files_with_matches" shows document paths '
            '(default), "count" shows match counts'
        ),
    )
    i: bool = Field(default=False, alias="-i", description="Case insensitive search")
    n: bool = Field(default=True, alias="-n", description="Show line numbers in output (content mode)")
    A: int | None = Field(default=None, alias="-A", ge=0, description="Lines to show after each match")
    B: int | None = Field(default=None, alias="-B", ge=0, description="Lines to show before each match")
    C: int | None = Field(
        default=None, alias="-C", ge=0, description="Lines to show before and after each match"
    )
    multiline: bool = Field(default=False, description="Enable multiline mode where . matches newlines")
    head_limit: int | None = Field(
        default=None, ge=0, description="Limit output to the first N lines/entries (default 250, 0 for all)"
    )
    offset: int = Field(
        default=0, ge=0, description="Skip the first N lines/entries before applying head_limit"
    )


@tool(
    name="grep",
    title="Search document contents",
    description=(
        "A powerful search tool over the knowledge base, like ripgrep. Supports full regex syntax "
        '(e.g. "log.*Error"). Searches notes and text files (JSON, canvas, HTML, ...); binaries are '
        'skipped. Filter with path, glob or type. Output modes: "content" shows '
        'matching lines as path:line:text, "files_with_matches" shows only paths (default), "count" '
        "shows match counts. Patterns that run too long are stopped with an error."
    ),
    args=GrepArgs,
)
async def grep(ctx: ToolContext, args: GrepArgs) -> str:
    kb = await open_kb()
    options = GrepOptions(
        pattern=args.pattern,
        output_mode=args.output_mode,
        ignore_case=args.i,
        line_numbers=args.n,
        before=args.B or 0,
        after=args.A or 0,
        context=args.C,
        multiline=args.multiline,
        head_limit=250 if args.head_limit is None else args.head_limit,
        offset=args.offset,
        timeout=GREP_TIMEOUT_SECONDS,
    )
    # What names the documents searched (with the index's and the texts' generations, kept by view_docs).
    # Notes only: the last call's list as it is while nothing changed, without scoping, filtering and
    # checking 10,000 entries again on the event loop.
    notes_only = ("grep", ctx.access.folder_ids, args.path, args.glob, args.type, "notes")
    docs: Iterable[tuple[str, str]] | None = kb.kept_docs(notes_only)
    paused = None
    if docs is None:
        docs, paused = await _docs(ctx, kb, args, notes_only)
    # Joined once and kept while the budget allows (only the kept list of notes): a scan then joins
    # nothing and runs off the GIL.
    joined = await kb.joined_docs(docs) if isinstance(docs, list) else None
    try:
        # Off the event loop: a long search must not stall live document sync.
        result = await asyncio.to_thread(grep_result, docs, options, paused=paused, joined=joined)
    except GrepTimeout as exc:
        raise ToolError(f"Error: {exc}") from exc
    except GrepError as exc:
        raise ToolError(f"Error: {exc}") from exc
    return result.text


async def _docs(
    ctx: ToolContext, kb: KnowledgeBase, args: GrepArgs, notes_only: tuple[object, ...]
) -> tuple[Iterable[tuple[str, str]], Callable[[], float] | None]:
    """The (path, text) pairs to search, in output order, and for a streamed scan what says how long
    it waited for texts to load."""
    entries = _scoped(ctx, kb, args.path)
    if args.type:
        extensions = grep_type_filter(args.type)
        entries = [e for e in entries if admitted_by_type(e, extensions)]
    if args.glob:
        try:
            keep = grep_glob_filter(args.glob, scope=args.path)
        except ValueError as exc:
            raise ToolError(f"Error: {exc}") from exc
        entries = [e for e in entries if keep(e.user_path)]
    notes = [e for e in entries if e.is_markdown]
    if len(notes) == len(entries) and not kb.texts.holds(e.doc_id for e in notes):
        # Texts not all in memory (the first grep, or a vault larger than the text cache's budget): load
        # them as the scan reaches them, so its peak stays near the budget instead of the whole vault.
        stream = kb.streamed_docs(notes)
        return stream, stream.waited_seconds
    if len(notes) == len(entries):
        return await kb.view_docs(notes, same_as=notes_only), None
    # Text files too (JSON, canvas, HTML, ...), in path order as ripgrep.
    docs = await kb.view_docs(notes, same_as=(*notes_only[:-1], "notes beside files"))
    return sorted([*docs, *await file_docs(kb, [e for e in entries if not e.is_markdown])]), None


def _scoped(ctx: ToolContext, kb: KnowledgeBase, path: str | None) -> list[DocEntry]:
    """A document path searches that document; a folder path searches under it."""
    if path:
        single = kb.index.resolve(ctx.access, path)
        if single is not None and not path.endswith("/"):
            return [single]
    return kb.visible(ctx, scope=path, files=True)
