"""The `resolve_thread` tool: close (or reopen) a thread this token started."""

from __future__ import annotations

from pydantic import Field

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.tools.support.threads import THREAD_DESCRIPTION, commenter, find_thread, may_comment
from suggestions.lifecycle.commenting import thread_resolve


class ResolveThreadArgs(ToolArgs):
    thread: str = Field(max_length=32, description=THREAD_DESCRIPTION)
    reopen: bool = Field(default=False, description="Reopen a resolved thread instead")


@tool(
    name="resolve_thread",
    title="Resolve a thread",
    description=(
        "Marks a comment thread you started as resolved (or, with reopen, open again). Threads people "
        "started are theirs to resolve: reply instead."
    ),
    args=ResolveThreadArgs,
    read_only=False,
)
async def resolve_thread(ctx: ToolContext, args: ResolveThreadArgs) -> str:
    may_comment(ctx)
    kb = await open_kb()
    thread = await find_thread(ctx, kb, args.thread)
    if thread.token_id is None or thread.token_id != ctx.access.token_id:
        raise ToolError(
            f"Error: thread {thread.uid} was started by {thread.author}; only its starter or a reviewer "
            "resolves it. Reply instead."
        )
    if thread.suggestion_id is not None:
        raise ToolError("Error: a suggestion's discussion closes with its decision.")
    await thread_resolve(store=kb.store, thread=thread, commenter=commenter(ctx), resolved=not args.reopen)
    return f"Thread {thread.uid} is {'open again' if args.reopen else 'resolved'}."
