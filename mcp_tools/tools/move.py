from __future__ import annotations

from pydantic import Field

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.tools.support.writing import (
    COMMENT_DESCRIPTION,
    proposer,
    refuse_trash_path,
    refuse_windows_name,
)
from suggestions.errors import SuggestionError
from suggestions.lifecycle.moving import suggestion_propose_move


class MoveArgs(ToolArgs):
    file_path: str = Field(
        description=(
            "Path of the document, or of a sub-folder, to move or rename (e.g. 'Lens/Notes/Old.md' or "
            "'Lens/Notes'; a trailing '/' always means the sub-folder)"
        )
    )
    new_path: str = Field(
        description=(
            "Its new path, in the same folder or another one you may write (e.g. 'Lens/Archive/Old.md')"
        )
    )
    comment: str | None = Field(default=None, description=COMMENT_DESCRIPTION)


@tool(
    name="move",
    title="Suggest a move or rename",
    description=(
        "Suggests moving or renaming a document, or a sub-folder with everything in it, within its folder "
        "or into another folder you may write. When a reviewer accepts it, the entries move and every "
        "wikilink keeps pointing where it did: links to what moved are rewritten, and the moved notes' own "
        "relative links too. Collisions, a folder moved into itself and invalid paths are refused."
    ),
    args=MoveArgs,
    read_only=False,
    idempotent=False,
    tasks=True,
)
async def move(ctx: ToolContext, args: MoveArgs) -> str:
    refuse_trash_path(args.file_path)
    refuse_trash_path(args.new_path)
    refuse_windows_name(args.new_path)
    kb = await open_kb()
    try:
        suggestion, requested = await suggestion_propose_move(
            store=kb.store,
            access=ctx.access,
            proposer=proposer(ctx),
            file_path=args.file_path,
            new_path=args.new_path,
            comment=args.comment,
        )
    except SuggestionError as exc:
        raise ToolError(str(exc)) from exc
    ctx.record_proposal(suggestion.uid)
    what = "the folder " if requested.moves_folder else ""
    return (
        f"Suggested moving {what}{suggestion.path} -> {suggestion.new_path} for human review "
        f"(suggestion {suggestion.uid}, pending). Links are rewritten when it is accepted."
    )
