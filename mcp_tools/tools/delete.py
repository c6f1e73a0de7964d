from __future__ import annotations

from pydantic import Field

from lensrelay.vault.trash import linking_notes
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.tools.support.confirming import confirm_forced_delete
from mcp_tools.tools.support.writing import COMMENT_DESCRIPTION, proposer, writable_entry
from suggestions.errors import SuggestionError
from suggestions.lifecycle.moving import suggestion_propose_delete


class DeleteArgs(ToolArgs):
    file_path: str = Field(description="Path of the document to delete")
    force: bool = Field(
        default=False,
        description=(
            "Suggest the delete even though other notes link to the document (by default such a delete "
            "is refused with the list of linking notes; their links stop resolving until it is restored)"
        ),
    )
    comment: str | None = Field(default=None, description=COMMENT_DESCRIPTION)


@tool(
    name="delete",
    title="Suggest deleting a document",
    description=(
        "Suggests deleting a document; if a reviewer accepts, it moves to its folder's trash (restorable). "
        "Refused while other notes link to it, listing them, unless force is set; a forced delete is "
        "confirmed with the person first where the client can ask them (elicitation)."
    ),
    args=DeleteArgs,
    read_only=False,
    destructive=True,
    idempotent=False,
    tasks=True,
)
async def delete(ctx: ToolContext, args: DeleteArgs) -> str:
    kb = await open_kb()
    entry = writable_entry(ctx, kb, args.file_path)
    confirmed = ""
    if args.force:
        linking = await linking_notes(kb.store, doc_ids=[entry.doc_id], access=ctx.access)
        if linking:
            paths = [e.user_path for e in linking]
            confirmed = await confirm_forced_delete(ctx, path=entry.user_path, linking=paths)
    try:
        suggestion = await suggestion_propose_delete(
            store=kb.store,
            access=ctx.access,
            proposer=proposer(ctx),
            entry=entry,
            force=args.force,
            comment=args.comment,
        )
    except SuggestionError as exc:
        raise ToolError(str(exc)) from exc
    ctx.record_proposal(suggestion.uid)
    return (
        f"Suggested deleting {entry.user_path} for human review (suggestion {suggestion.uid}, pending)."
        + confirmed
    )
