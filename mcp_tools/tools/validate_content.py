"""The `validate_content` tool: what is wrong in a note's text (front matter, wikilinks, CriticMarkup), and
the note as it reads once every suggestion is accepted. It reads only; nothing is stored or proposed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic import Field

from lensrelay.files import file_kind
from lensrelay.files.kinds import extension
from lensrelay.links.graph import LinkGraph
from lensrelay.links.resolve import LinkTarget, Resolution
from lensrelay.text.vaultpath import InvalidPath, split_user_path, with_md_suffix
from lensrelay.text.wikilinks import WikiLink
from mcp_tools.engines.catn import format_read, line_count
from mcp_tools.engines.validation import (
    Finding,
    excerpt,
    frontmatter_findings,
    markup_findings,
    wikilinks_by_line,
)
from mcp_tools.kb import KnowledgeBase, open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from suggestions.markup.accepted_view import accepted_text

# The largest `content` checked, in characters: a note far longer than any real one, well under the MCP
# body limit. Longer content is refused before anything is parsed.
MAX_CONTENT_CHARS = 1_000_000
# How much of the accepted view is shown, and how many findings are listed.
ACCEPTED_VIEW_CHARS = 4000
MAX_FINDINGS = 100

NO_PROBLEMS = "No problems found."


class ValidateContentArgs(ToolArgs):
    file_path: str | None = Field(
        default=None,
        description=(
            "Path of a note (e.g. 'Lens/Photosynthesis.md'). Alone: the note's stored text is checked. With "
            "content: the content is checked as that note's text (its links resolve from there; the note "
            "need not exist yet)"
        ),
    )
    content: str | None = Field(
        default=None,
        description=(
            f"Markdown to check instead of a stored note (at most {MAX_CONTENT_CHARS:,} characters). "
            "Without file_path its wikilinks are not checked"
        ),
    )


@tool(
    name="validate_content",
    title="Check a note for problems",
    description=(
        "Checks a note's text, stored (file_path) or proposed (content), and lists its problems one per "
        "line with line numbers: front matter that is not valid YAML or not a mapping of properties, "
        "wikilinks that resolve to no note you can see, and unbalanced CriticMarkup (an opening without "
        "its closing, a stray closing). When the text holds suggestions it also shows the note as if every "
        "suggestion were accepted. Nothing is changed; no need to read the note first."
    ),
    args=ValidateContentArgs,
)
async def validate_content(ctx: ToolContext, args: ValidateContentArgs) -> str:
    if args.file_path is None and args.content is None:
        raise ToolError("Error: give file_path (a stored note), content (text to check), or both.")
    if args.content is not None and len(args.content) > MAX_CONTENT_CHARS:
        raise ToolError(
            f"Error: content is {len(args.content):,} characters; validate_content checks at most "
            f"{MAX_CONTENT_CHARS:,}. Check it in parts."
        )
    kb = await open_kb()
    source: LinkTarget | None = None
    stored = ""
    if args.file_path is not None:
        source, stored = await _note(ctx, kb, args.file_path, need_stored=args.content is None)
    text = args.content if args.content is not None else stored
    # The text checks are pure and may take a second on a megabyte of markup: off the event loop. Links
    # resolve on it, where the graph lives.
    checked = await asyncio.to_thread(_text_checks, text, links=source is not None)
    findings = checked.findings
    if source is not None:
        findings += _link_findings(kb.link_graph(ctx), source, checked.links)
    findings.sort(key=lambda f: f.line)

    lines = line_count(text)
    size = f"{lines:,} line{'s' if lines != 1 else ''}, {len(text):,} characters"
    if args.content is None:
        assert source is not None
        out = [f"Checked {source.user_path} (its stored text: {size})."]
    else:
        where = f" as {source.user_path}" if source is not None else ""
        out = [f"Checked the given content{where} ({size})."]
    view = checked.view
    if view != text:
        out.append(
            "Line numbers count the text with its suggestions' markup; read shows it without the markup."
        )
    out.append("")
    if findings:
        count = len(findings)
        out.append(f"{count} problem{'s' if count != 1 else ''} found:")
        out += [f.render() for f in findings[:MAX_FINDINGS]]
        if count > MAX_FINDINGS:
            out.append(f"… and {count - MAX_FINDINGS} more.")
    else:
        out.append(NO_PROBLEMS)
    if source is None:
        out += ["", "Wikilinks were not checked: give file_path with content to resolve them from that note."]
    if view != text:
        out += ["", _accepted_view(view)]
    return "\n".join(out)


async def _note(
    ctx: ToolContext, kb: KnowledgeBase, file_path: str, *, need_stored: bool
) -> tuple[LinkTarget, str]:
    """Where the note is (for its links) and, when asked, its stored text. A stored note must exist; a
    note the content is meant for may be new, in a folder the caller can see."""
    entry = kb.index.resolve(ctx.access, file_path)
    if entry is None and need_stored:
        raise ToolError(f"Error: Document not found: {file_path}")
    if entry is not None:
        if not entry.is_markdown:
            raise ToolError(
                f"Error: {entry.user_path} is not a markdown note ({entry.type}): validate_content checks "
                "notes' front matter, wikilinks and CriticMarkup."
            )
        return entry.link_target, (await kb.raw_text(entry) if need_stored else "")
    if extension(file_path) and file_kind(file_path) != "markdown":
        raise ToolError(
            f"Error: {file_path} is not a markdown note: validate_content checks notes' front matter, "
            "wikilinks and CriticMarkup."
        )
    try:
        folder, relative = split_user_path(with_md_suffix(file_path))
    except InvalidPath as exc:
        raise ToolError(f"Error: invalid path {file_path!r:.200}: {exc}") from exc
    # A folder the caller cannot see answers as one that does not exist.
    if not any(name == folder for _, name in kb.index.visible_folders(ctx.access)):
        raise ToolError(f"Error: Folder not found: {folder}")
    return LinkTarget(folder=folder, path=relative), ""


@dataclass
class _Checked:
    findings: list[Finding]
    links: list[tuple[int, WikiLink]]
    view: str


def _text_checks(text: str, *, links: bool) -> _Checked:
    return _Checked(
        findings=frontmatter_findings(text) + markup_findings(text),
        links=wikilinks_by_line(text) if links else [],
        view=accepted_text(text),
    )


def _link_findings(graph: LinkGraph, source: LinkTarget, links: list[tuple[int, WikiLink]]) -> list[Finding]:
    findings = []
    for line, link in links:
        if _resolve(graph, source, link.target).target is None:
            shown = ("!" if link.embed else "") + f"[[{excerpt(link.target)}]]"
            what = "file" if link.embed else "note"
            findings.append(Finding(line, "link", f"{shown} resolves to no {what} you can see"))
    return findings


def _resolve(graph: LinkGraph, source: LinkTarget, target: str) -> Resolution:
    # The graph's resolver over the caller's documents, asked directly: `LinkGraph.links` would keep this
    # text (and a source that may not exist) in the graph's caches.
    return graph._index.resolve(source=source, target=target)


def _accepted_view(view: str) -> str:
    shown = view[:ACCEPTED_VIEW_CHARS]
    if len(view) > ACCEPTED_VIEW_CHARS:
        head = (
            f"As if every suggestion were accepted (the first {ACCEPTED_VIEW_CHARS:,} of {len(view):,} "
            "characters):"
        )
    else:
        head = "As if every suggestion were accepted:"
    return head + "\n" + format_read(shown, limit=line_count(shown) or 1)
