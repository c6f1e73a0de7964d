"""The `comment` tool: start a thread on a passage of a note."""

from __future__ import annotations

from pydantic import Field

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.tools.support.threads import TEXT_DESCRIPTION, commenter, may_comment
from mcp_tools.tools.support.writing import require_read, writable_entry
from suggestions.errors import SuggestionError
from suggestions.lifecycle.commenting import MAX_COMMENT_CHARS, MAX_PASSAGE_CHARS, thread_start


class CommentArgs(ToolArgs):
    file_path: str = Field(description="The note to comment on (e.g. 'Lens/Photosynthesis.md')")
    passage: str = Field(
        max_length=MAX_PASSAGE_CHARS,
        description="The text the comment is about, exactly as read shows it; it must be found once",
    )
    text: str = Field(max_length=MAX_COMMENT_CHARS, description=TEXT_DESCRIPTION)


@tool(
    name="comment",
    title="Comment on a passage",
    description=(
        "Starts a comment thread on a passage of a note, for people and assistants to discuss: the passage "
        "is highlighted and your comment written after it as CriticMarkup ({==passage==}{>>comment<<}), "
        "which read does not show. Read the note first. Returns the thread's id: reply and resolve_thread "
        "take it, list_threads shows the answers. To discuss a pending suggestion, reply with its id."
    ),
    args=CommentArgs,
    read_only=False,
    idempotent=False,
)
async def comment(ctx: ToolContext, args: CommentArgs) -> str:
    may_comment(ctx)
    kb = await open_kb()
    entry = writable_entry(ctx, kb, args.file_path)
    await require_read(ctx, entry, args.file_path)
    try:
        thread = await thread_start(
            store=kb.store, entry=entry, commenter=commenter(ctx), passage=args.passage, body=args.text
        )
    except SuggestionError as exc:
        raise ToolError(str(exc)) from exc
    return (
        f"Started thread {thread.uid} on {entry.user_path}. People see it beside the passage; you are told "
        "when someone replies (list_threads shows the thread)."
    )
