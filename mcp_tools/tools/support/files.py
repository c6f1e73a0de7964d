"""What the tools do with files that are not notes: show text files numbered, describe binaries, feed text
files to grep, and turn edits into whole-file replacement suggestions (see
suggestions/lifecycle/filetext.py)."""

from __future__ import annotations

from collections.abc import Sequence

from lensrelay.files import is_text_file, mimetype
from lensrelay.files.kinds import extension
from lensrelay.vault.paths import DocEntry
from mcp_tools.engines.catn import format_read
from mcp_tools.kb import KnowledgeBase, target_of
from mcp_tools.registry import ToolContext, ToolError
from suggestions.lifecycle.filetext import (
    FileContent,
    FileOutcome,
    file_content,
    file_view,
    pending_replacements,
)
from suggestions.markup.shown import changed_lines

# ripgrep's `--type` names for the file types a vault holds (`rg --type-list`), plus Obsidian's canvas.
GREP_TYPES: dict[str, frozenset[str]] = {
    "md": frozenset({"md", "markdown"}),
    "markdown": frozenset({"md", "markdown"}),
    "json": frozenset({"json"}),
    "canvas": frozenset({"canvas"}),
    "html": frozenset({"html", "htm"}),
    "txt": frozenset({"txt"}),
    "csv": frozenset({"csv", "tsv"}),
    "yaml": frozenset({"yaml", "yml"}),
    "toml": frozenset({"toml"}),
    "css": frozenset({"css"}),
    "js": frozenset({"js", "mjs"}),
    "ts": frozenset({"ts"}),
    "xml": frozenset({"xml"}),
    "svg": frozenset({"svg"}),
    "py": frozenset({"py"}),
}


def grep_type_filter(name: str) -> frozenset[str]:
    """The extensions a `type` filter admits; ripgrep's own error for a name it does not know."""
    found = GREP_TYPES.get(name.lower())
    if found is None:
        raise ToolError(f"Error: unrecognized file type: {name} (known: {', '.join(sorted(GREP_TYPES))})")
    return found


def admitted_by_type(entry: DocEntry, extensions: frozenset[str]) -> bool:
    return extension(entry.path) in extensions


# -- reading ---------------------------------------------------------------------------------------------


async def linked_from(ctx: ToolContext, kb: KnowledgeBase, entry: DocEntry) -> list[str]:
    """The notes the caller may see that link to or embed this file."""
    notes = kb.visible(ctx)
    texts = await kb.view_texts(notes)
    sources = {target_of(e): texts[e.doc_id] for e in notes}
    return [source.user_path for source in kb.link_graph(ctx).backlinks(target_of(entry), sources)]


async def read_file(
    ctx: ToolContext, kb: KnowledgeBase, entry: DocEntry, *, offset: int | None, limit: int | None
) -> str:
    """A text file numbered like `cat -n` (as if its pending replacement were accepted, as notes are);
    a binary file described: type, size, hash, the notes linking to it."""
    content = await file_content(kb.store, entry)
    if content.text is None:
        return await _describe(ctx, kb, content)
    view = await file_view(kb.store, content)
    assert view is not None
    try:
        output = format_read(view, offset=offset, limit=limit)
    except ValueError as exc:
        raise ToolError(f"Error: {exc}") from exc
    await ctx.record_read(entry.doc_id)
    pending = await kb.store.db(pending_replacements, doc_id=entry.doc_id)
    if pending:
        output += "\n\n[Pending suggestions]\n" + "\n".join(
            f"{s.uid}: replaces the file ({changed_lines(s.old_text, s.new_text)}) ({s.author})"
            for s in pending
        )
    return output


async def _describe(ctx: ToolContext, kb: KnowledgeBase, content: FileContent) -> str:
    entry = content.entry
    what = "a binary file" if not is_text_file(entry.path) else "a file that is not UTF-8 text"
    lines = [
        f"{entry.user_path} is {what}; its content is not shown.",
        f"Type: {entry.type} ({mimetype(entry.path)})",
        f"Size: {content.size:,} bytes"
        if content.size is not None
        else "Size: unknown (no content stored yet)",
    ]
    if content.hash:
        lines.append(f"SHA-256: {content.hash}")
    linking = await linked_from(ctx, kb, entry)
    lines.append("Linked from:")
    lines += [f"- {path}" for path in linking] or ["- (no note links to it)"]
    return "\n".join(lines)


async def file_docs(kb: KnowledgeBase, entries: Sequence[DocEntry]) -> list[tuple[str, str]]:
    """(user path, text as read shows it) of the text files among ``entries``; binaries are skipped,
    as ripgrep skips them."""
    docs: list[tuple[str, str]] = []
    for entry in entries:
        if not is_text_file(entry.path):
            continue
        view = await file_view(kb.store, await file_content(kb.store, entry))
        if view is not None:
            docs.append((entry.user_path, view))
    return docs


# -- changing --------------------------------------------------------------------------------------------


def file_change_reply(entry: DocEntry, outcome: FileOutcome) -> str:
    assert outcome.suggestion is not None
    row = outcome.suggestion
    text = (
        f"Suggested a new version of {entry.user_path} for human review (suggestion {row.uid}, pending; "
        f"{changed_lines(row.old_text, row.new_text)}). The file holds no CriticMarkup: it changes when "
        "a reviewer accepts the suggestion."
    )
    if outcome.superseded:
        text += f" It builds on and supersedes {len(outcome.superseded)} earlier pending suggestion(s)."
    return text
