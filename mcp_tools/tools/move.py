from __future__ import annotations

from pydantic import Field

from lensrelay.documents import folder_paths
from lensrelay.vaultpath import InvalidPath, split_user_path, with_md_suffix
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.writing import COMMENT_DESCRIPTION, proposer, writable_entry
from suggestions.errors import SuggestionError
from suggestions.proposing import suggestion_propose_move_or_delete


class MoveArgs(ToolArgs):
    file_path: str = Field(description="Path of the document to move or rename")
    new_path: str = Field(description="Its new path, in the same folder (e.g. 'Lens/Archive/Old.md')")
    comment: str | None = Field(default=None, description=COMMENT_DESCRIPTION)


@tool(
    name="move",
    title="Suggest a move or rename",
    description=(
        "Suggests moving or renaming a document within its folder. When a reviewer accepts it, the "
        "document moves and every wikilink pointing at it is rewritten."
    ),
    args=MoveArgs,
    read_only=False,
    idempotent=False,
)
async def move(ctx: ToolContext, args: MoveArgs) -> str:
    kb = await open_kb()
    entry = writable_entry(ctx, kb, args.file_path)
    try:
        folder, relative = split_user_path(with_md_suffix(args.new_path))
    except InvalidPath as exc:
        raise ToolError(f"Error: invalid new_path {args.new_path!r}: {exc}") from exc
    if folder != entry.folder_name:
        raise ToolError("Error: a document can only move within its folder; keep the folder name.")
    new_user_path = f"{folder}{relative}"
    if kb.index.exists(new_user_path):
        raise ToolError(f"Error: {new_user_path} already exists.")
    folder_room = await kb.store.get(entry.folder_doc_id)
    assert folder_room is not None
    try:
        folder_paths(folder_room).check(relative, replacing=entry.path)
    except InvalidPath as exc:
        raise ToolError(f"Error: invalid new_path {args.new_path!r}: {exc}") from exc
    try:
        suggestion = await suggestion_propose_move_or_delete(
            store=kb.store, entry=entry, proposer=proposer(ctx), new_path=new_user_path, comment=args.comment
        )
    except SuggestionError as exc:
        raise ToolError(str(exc)) from exc
    return (
        f"Suggested moving {entry.user_path} -> {new_user_path} for human review "
        f"(suggestion {suggestion.uid}, pending). Links are rewritten when it is accepted."
    )
