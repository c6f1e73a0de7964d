"""The `list_threads` tool: the comment threads of a note or folder, with every comment."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lensrelay.text.vaultpath import MAX_PATH_CHARS
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, tool
from mcp_tools.tools.support.threads import thread_listing
from suggestions.selectors import threads_in_folders


class ListThreadsArgs(ToolArgs):
    path: str | None = Field(
        default=None, max_length=MAX_PATH_CHARS, description="Only threads on this note or under this folder"
    )
    status: Literal["open", "resolved"] | None = Field(default=None, description="Only threads in this state")
    limit: int = Field(
        default=20, ge=1, le=200, description="The thread changed last first; at most this many"
    )


@tool(
    name="list_threads",
    title="Comment threads",
    description=(
        "Lists comment threads (people's and assistants') with their state and every comment, the one "
        "changed last first: open or resolved, and detached when the passage was deleted from the note "
        "(the thread is kept). A thread on a suggestion names it."
    ),
    args=ListThreadsArgs,
)
async def list_threads(ctx: ToolContext, args: ListThreadsArgs) -> str:
    kb = await open_kb()
    rows = await kb.store.db(
        threads_in_folders,
        folder_ids=ctx.access.folder_ids,
        path=args.path,
        status=args.status,
        limit=args.limit,
    )
    if not rows:
        return "No threads found."
    listed = await kb.store.db(lambda: [thread_listing(row) for row in rows])
    return f"{len(rows)} thread(s), the one changed last first:\n" + "\n".join(listed)
