from __future__ import annotations

from pydantic import Field

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.writing import COMMENT_DESCRIPTION, proposer, writable_entry
from suggestions.errors import SuggestionError
from suggestions.proposing import suggestion_propose_move_or_delete


class DeleteArgs(ToolArgs):
    file_path: str = Field(description="Path of the document to delete")
    comment: str | None = Field(default=None, description=COMMENT_DESCRIPTION)


@tool(
    name="delete",
    title="Suggest deleting a document",
    description="Suggests deleting a document; it is removed only if a reviewer accepts.",
    args=DeleteArgs,
    read_only=False,
    destructive=True,
    idempotent=False,
)
async def delete(ctx: ToolContext, args: DeleteArgs) -> str:
    kb = await open_kb()
    entry = writable_entry(ctx, kb, args.file_path)
    try:
        suggestion = await suggestion_propose_move_or_delete(
            store=kb.store, entry=entry, proposer=proposer(ctx), new_path=None, comment=args.comment
        )
    except SuggestionError as exc:
        raise ToolError(str(exc)) from exc
    return f"Suggested deleting {entry.user_path} for human review (suggestion {suggestion.uid}, pending)."
