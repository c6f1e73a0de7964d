"""The `multi_edit` tool: several replacements in one document, atomically, as one suggestion."""

from __future__ import annotations

from pydantic import Field

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, tool
from mcp_tools.tools.support.edit_replies import edit_refused, edit_reply
from mcp_tools.tools.support.writing import COMMENT_DESCRIPTION, proposer, require_read, writable_entry
from suggestions.errors import SuggestionError
from suggestions.lifecycle.filetext import FileOutcome, suggestion_propose_file_change
from suggestions.lifecycle.proposing import EditSpec, Outcome, suggestion_propose_edits


class OneEdit(ToolArgs):
    old_string: str = Field(description="Text to find, exactly as read shows it")
    new_string: str = Field(description="Replacement text")
    replace_all: bool = Field(default=False, description="Replace all occurrences (default false)")


class MultiEditArgs(ToolArgs):
    file_path: str = Field(description="Path to the document to modify")
    edits: list[OneEdit] = Field(
        min_length=1, description="Edits applied in sequence; all succeed or none apply"
    )
    dry_run: bool = Field(default=False, description="Preview as a unified diff without changing anything")
    include_content: bool = Field(
        default=False, description="Include the document's resulting text (accepted view) in the response"
    )
    comment: str | None = Field(default=None, description=COMMENT_DESCRIPTION)


@tool(
    name="multi_edit",
    title="Suggest several edits at once",
    description=(
        "Several find-and-replace edits on one document, applied in sequence and atomically (all succeed "
        "or none apply), written as one CriticMarkup suggestion for review. dry_run returns a unified diff "
        "and changes nothing. You must read the document first."
    ),
    args=MultiEditArgs,
    read_only=False,
    idempotent=False,
    tasks=True,
)
async def multi_edit(ctx: ToolContext, args: MultiEditArgs) -> str:
    kb = await open_kb()
    entry = writable_entry(ctx, kb, args.file_path)
    await require_read(ctx, entry, args.file_path)
    specs = [EditSpec(e.old_string, e.new_string, e.replace_all) for e in args.edits]
    outcome: Outcome | FileOutcome
    try:
        # A text file that is not markdown: one whole-file replacement suggestion, no markup.
        propose = suggestion_propose_edits if entry.is_markdown else suggestion_propose_file_change
        outcome = await propose(
            store=kb.store,
            entry=entry,
            proposer=proposer(ctx),
            specs=specs,
            tool="multi_edit",
            comment=args.comment,
            dry_run=args.dry_run,
        )
    except SuggestionError as exc:
        raise edit_refused(str(exc)) from exc
    if outcome.suggestion is not None:  # none for a dry run
        ctx.record_proposal(outcome.suggestion.uid)
    return edit_reply(
        user_path=entry.user_path,
        specs=specs,
        outcome=outcome,
        dry_run=args.dry_run,
        include_content=args.include_content,
    )
