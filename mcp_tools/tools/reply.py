"""The `reply` tool: answer in a thread, or discuss a pending suggestion."""

from __future__ import annotations

from pydantic import Field

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.tools.support.threads import (
    TEXT_DESCRIPTION,
    THREAD_DESCRIPTION,
    commenter,
    may_comment,
    reply_target,
)
from suggestions.errors import SuggestionError
from suggestions.lifecycle.commenting import MAX_COMMENT_CHARS, thread_reply


class ReplyArgs(ToolArgs):
    thread: str = Field(max_length=32, description=THREAD_DESCRIPTION)
    text: str = Field(max_length=MAX_COMMENT_CHARS, description=TEXT_DESCRIPTION)


@tool(
    name="reply",
    title="Reply in a thread",
    description=(
        "Replies in a comment thread (its id from comment or list_threads), or, given a pending "
        "suggestion's id, in the discussion of that suggestion. The reply is written after the thread's "
        "last comment in the note."
    ),
    args=ReplyArgs,
    read_only=False,
    idempotent=False,
)
async def reply(ctx: ToolContext, args: ReplyArgs) -> str:
    may_comment(ctx)
    kb = await open_kb()
    target = await reply_target(ctx, kb, args.thread)
    try:
        said = await thread_reply(store=kb.store, thread=target, commenter=commenter(ctx), body=args.text)
    except SuggestionError as exc:
        raise ToolError(str(exc)) from exc
    thread = said.thread
    where = (
        " (the thread is detached: its passage is gone, the reply is kept with it)" if thread.detached else ""
    )
    return f"Replied in thread {thread.uid} on {thread.path}{where}."
