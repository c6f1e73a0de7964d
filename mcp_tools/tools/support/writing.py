"""What every write tool shares: who proposes, read-before-edit, and turning refusals into tool errors."""

from __future__ import annotations

from lensrelay.files import is_text_file
from lensrelay.text.vaultpath import InvalidPath, names_trash, split_user_path, trash_refusal
from lensrelay.vault.paths import DocEntry
from mcp_tools.kb import KnowledgeBase
from mcp_tools.registry import ToolContext, ToolError
from suggestions.lifecycle.filetext import binary_refusal
from suggestions.lifecycle.proposing import Outcome, Proposer

COMMENT_DESCRIPTION = (
    "Optional note to the reviewer explaining why; added as a {>>comment<<} on the suggestion."
)


def proposer(ctx: ToolContext) -> Proposer:
    """Who proposes: the suggestion's author (markup, row, presence) is whom the session acts for and its
    client, `claude-review · Claude Code`, as its history label says."""
    return Proposer(
        author=ctx.access.actor.with_client(ctx.client_name).display_name,
        token_id=ctx.access.token_id,
        session_id=ctx.session_id or ctx.session_key,
        client_name=ctx.client_name,
    )


async def require_read(ctx: ToolContext, entry: DocEntry, file_path: str) -> None:
    if not await ctx.has_read(entry.doc_id):
        raise ToolError(
            "You must read this document before editing it. "
            f'Call the read tool with file_path: "{file_path}" first.'
        )


def refuse_trash_path(file_path: str) -> None:
    """A path naming a folder's trash, in any spelling, is refused before anything is looked up or
    written: nothing is created in the trash, moved to it or changed in it but through the trash service.
    The refusal depends on the path alone, so it says nothing about what the trash holds."""
    try:
        _, relative = split_user_path(file_path.rstrip("/"))
    except InvalidPath:
        return  # refused later, with the rule it breaks
    if names_trash(relative):
        raise ToolError(f"Error: {trash_refusal(repr(file_path))}.")


WINDOWS_FORBIDDEN = '"<>:|?*'


def refuse_windows_name(file_path: str) -> None:
    """Names Windows cannot hold are refused, naming the rule: the vault syncs to Obsidian on every
    system, and such a file would break the sync of everyone on Windows."""
    try:
        _, relative = split_user_path(file_path.rstrip("/"))
    except InvalidPath:
        return  # refused later, with the rule it breaks
    for name in relative.strip("/").split("/"):
        bad = sorted({c for c in name if c in WINDOWS_FORBIDDEN or ord(c) < 32})
        if bad:
            shown = " ".join(repr(c) for c in bad)
            raise ToolError(
                f"Error: {name!r} cannot be a file or folder name: Windows forbids the characters "
                f"{WINDOWS_FORBIDDEN} (found {shown}). Choose another name."
            )
        if name.endswith((".", " ")):
            raise ToolError(
                f"Error: {name!r} cannot be a file or folder name: Windows forbids names ending in a dot "
                "or a space. Choose another name."
            )


def writable_entry(ctx: ToolContext, kb: KnowledgeBase, file_path: str) -> DocEntry:
    if not ctx.access.can_suggest:
        raise ToolError("This token is read-only (role view): it cannot propose changes.")
    refuse_trash_path(file_path)
    entry = kb.resolve(ctx, file_path)
    refuse_binary(entry)
    return entry


def refuse_binary(entry: DocEntry) -> None:
    """Said before anything else: reading a binary first would not make it editable."""
    if not entry.is_markdown and not is_text_file(entry.path):
        raise ToolError(str(binary_refusal(entry)))


def describe(outcome: Outcome) -> str:
    """What the suggestion marks, counted from its hunks: honest whatever the diff made of the request."""
    hunks = len(outcome.hunks)
    return (
        f"{hunks} hunk{'s' if hunks != 1 else ''}: {outcome.marked_for_deletion} characters marked for "
        f"deletion, {outcome.inserted} inserted"
    )
