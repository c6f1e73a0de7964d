"""The `edit` tool: one exact replacement in a document, proposed as a suggestion for review."""

from __future__ import annotations

from pydantic import Field

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, tool
from mcp_tools.tools.support.edit_replies import edit_refused, edit_reply
from mcp_tools.tools.support.writing import COMMENT_DESCRIPTION, proposer, require_read, writable_entry
from suggestions.errors import SuggestionError
from suggestions.lifecycle.filetext import FileOutcome, suggestion_propose_file_change
from suggestions.lifecycle.proposing import EditSpec, Outcome, suggestion_propose_edits


class EditArgs(ToolArgs):
    file_path: str = Field(description="Path to the document to modify (e.g. 'Lens/Photosynthesis.md')")
    old_string: str = Field(description="The text to replace, exactly as read shows it")
    new_string: str = Field(description="The text to replace it with (must be different from old_string)")
    replace_all: bool = Field(
        default=False, description="Replace all occurrences of old_string (default false)"
    )
    comment: str | None = Field(default=None, description=COMMENT_DESCRIPTION)


@tool(
    name="edit",
    title="Suggest an edit",
    description=(
        "Performs an exact string replacement in a document, as a suggestion: the change is written into "
        "the live document as CriticMarkup ({--old--}{++new++}) for a human to accept or reject. You must "
        "read the document first. old_string must be unique unless replace_all is true. In a text file "
        "that is not markdown (JSON, canvas, HTML) no markup is written: the new version is one "
        "suggestion, applied when accepted; JSON must stay valid. Binary files cannot be edited."
    ),
    args=EditArgs,
    read_only=False,
    idempotent=False,
    tasks=True,
)
async def edit(ctx: ToolContext, args: EditArgs) -> str:
    kb = await open_kb()
    entry = writable_entry(ctx, kb, args.file_path)
    await require_read(ctx, entry, args.file_path)
    specs = [EditSpec(args.old_string, args.new_string, args.replace_all)]
    outcome: Outcome | FileOutcome
    try:
        # A text file that is not markdown: one whole-file replacement suggestion, no markup.
        propose = suggestion_propose_edits if entry.is_markdown else suggestion_propose_file_change
        outcome = await propose(
            store=kb.store,
            entry=entry,
            proposer=proposer(ctx),
            specs=specs,
            tool="edit",
            comment=args.comment,
        )
    except SuggestionError as exc:
        raise edit_refused(str(exc)) from exc
    if outcome.suggestion is not None:
        ctx.record_proposal(outcome.suggestion.uid)
    return edit_reply(user_path=entry.user_path, specs=specs, outcome=outcome)
