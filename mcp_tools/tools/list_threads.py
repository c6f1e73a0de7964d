"""The `list_threads` tool: the comment threads of a note or folder, with every comment."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from lensrelay.text.vaultpath import MAX_PATH_CHARS
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolResult, tool
from mcp_tools.tools.support.threads import thread_listing
from suggestions.models import Thread
from suggestions.selectors import threads_in_folders


class ListThreadsArgs(ToolArgs):
    path: str | None = Field(
        default=None, max_length=MAX_PATH_CHARS, description="Only threads on this note or under this folder"
    )
    status: Literal["open", "resolved"] | None = Field(default=None, description="Only threads in this state")
    limit: int = Field(
        default=20, ge=1, le=200, description="The thread changed last first; at most this many"
    )


class CommentOutput(BaseModel):
    id: str
    author: str
    text: str
    created: str


class ThreadOutput(BaseModel):
    id: str
    status: str = Field(description="open or resolved")
    detached: bool = Field(description="Its passage was deleted from the note; the thread is kept")
    path: str
    passage: str
    suggestion: str | None = Field(description="The suggestion it discusses, if any")
    resolved_by: str
    comments: list[CommentOutput]


class ListThreadsOutput(BaseModel):
    threads: list[ThreadOutput]


def _structured(thread: Thread) -> ThreadOutput:
    return ThreadOutput(
        id=thread.uid,
        status=thread.status,
        detached=thread.detached,
        path=thread.path,
        passage=thread.passage,
        suggestion=thread.suggestion.uid if thread.suggestion is not None else None,
        resolved_by=thread.resolved_by,
        comments=[
            CommentOutput(id=c.uid, author=c.author, text=c.body, created=c.created.isoformat())
            for c in thread.comments.all()
        ],
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
    output=ListThreadsOutput,
)
async def list_threads(ctx: ToolContext, args: ListThreadsArgs) -> ToolResult:
    kb = await open_kb()
    rows = await kb.store.db(
        threads_in_folders,
        folder_ids=ctx.access.folder_ids,
        path=args.path,
        status=args.status,
        limit=args.limit,
    )
    if not rows:
        return ToolResult("No threads found.", {"threads": []})
    listed = [thread_listing(row) for row in rows]
    text = f"{len(rows)} thread(s), the one changed last first:\n" + "\n".join(listed)
    data = ListThreadsOutput(threads=[_structured(row) for row in rows])
    return ToolResult(text, data.model_dump(), tuple(row.path for row in rows))
