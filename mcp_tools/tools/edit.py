from __future__ import annotations

from pydantic import Field

from mcp_tools.filetools import file_change_reply
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.writing import COMMENT_DESCRIPTION, describe, proposer, require_read, writable_entry
from suggestions.errors import SuggestionError
from suggestions.filetext import suggestion_propose_file_change
from suggestions.proposing import EditSpec, suggestion_propose_edits


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
)
async def edit(ctx: ToolContext, args: EditArgs) -> str:
    kb = await open_kb()
    entry = writable_entry(ctx, kb, args.file_path)
    await require_read(ctx, entry, args.file_path)
    spec = EditSpec(args.old_string, args.new_string, args.replace_all)
    if not entry.is_markdown:
        try:
            changed = await suggestion_propose_file_change(
                store=kb.store,
                entry=entry,
                proposer=proposer(ctx),
                tool="edit",
                specs=[spec],
                comment=args.comment,
            )
        except SuggestionError as exc:
            raise ToolError(str(exc)) from exc
        return file_change_reply(entry, changed)
    try:
        outcome = await suggestion_propose_edits(
            store=kb.store,
            entry=entry,
            proposer=proposer(ctx),
            specs=[spec],
            tool="edit",
            comment=args.comment,
        )
    except SuggestionError as exc:
        raise ToolError(str(exc)) from exc
    assert outcome.suggestion is not None
    count = outcome.occurrences[0]
    text = (
        f"Edited {entry.user_path}: replaced {len(args.old_string) * count} characters with CriticMarkup "
        f"suggestion for human review (suggestion {outcome.suggestion.uid}, pending; {describe(outcome)})."
    )
    if count > 1:
        text += f" {count} occurrences replaced."
    if outcome.superseded:
        text += f" It supersedes {len(outcome.superseded)} earlier pending suggestion(s) on the same text."
    return text
