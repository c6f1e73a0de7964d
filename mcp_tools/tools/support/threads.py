"""What the thread tools share: who comments, finding a thread in the token's folders, and the listing."""

from __future__ import annotations

from django.utils import timezone

from mcp_tools.kb import KnowledgeBase
from mcp_tools.registry import ToolContext, ToolError
from mcp_tools.tools.support.writing import proposer
from suggestions.lifecycle.commenting import Commenter
from suggestions.models import Suggestion, Thread
from suggestions.selectors import age, suggestion_in_folders, thread_in_folders

THREAD_DESCRIPTION = (
    "The thread's id (as comment or list_threads gave it), or a suggestion's id to discuss it"
)
TEXT_DESCRIPTION = (
    "What you say; @username mentions a person. Plain text: CriticMarkup delimiters are refused"
)


def commenter(ctx: ToolContext) -> Commenter:
    who = proposer(ctx)
    return Commenter(author=who.author, token_id=who.token_id, session_id=who.session_id)


def may_comment(ctx: ToolContext) -> None:
    if not ctx.access.can_suggest:
        raise ToolError("This token is read-only (role view): it can list threads but not comment.")


async def find_thread(ctx: ToolContext, kb: KnowledgeBase, uid: str) -> Thread:
    """The thread in the token's folders; one of another folder is not found, as one that does not exist."""
    thread = await kb.store.db(thread_in_folders, uid=uid, folder_ids=ctx.access.folder_ids)
    if thread is None:
        raise ToolError(f"Error: Thread not found: {uid}")
    return thread


async def reply_target(ctx: ToolContext, kb: KnowledgeBase, uid: str) -> Thread | Suggestion:
    """The thread, else the pending suggestion in the token's folders whose discussion a reply opens."""
    suggestion = await kb.store.db(suggestion_in_folders, uid=uid, folder_ids=ctx.access.folder_ids)
    if suggestion is None or await kb.store.db(Thread.objects.filter(uid=uid).exists):
        return await find_thread(ctx, kb, uid)
    if not suggestion.is_pending:
        raise ToolError(
            f"Error: suggestion {uid} is {suggestion.status}; its discussion is closed. Start a "
            "thread on the passage instead (comment)."
        )
    return suggestion


def thread_listing(thread: Thread, *, now_ms: float | None = None) -> str:
    now = now_ms if now_ms is not None else timezone.now().timestamp() * 1000
    passage = thread.passage.replace("\n", " ")
    passage = passage if len(passage) <= 120 else passage[:119] + "…"
    state = thread.status.upper() + (
        ", DETACHED (its passage is gone from the note)" if thread.detached else ""
    )
    about = f"suggestion {thread.suggestion.uid}" if thread.suggestion is not None else f'"{passage}"'
    lines = [f"- {thread.uid} {state} {thread.path}: on {about}"]
    if thread.status == Thread.Status.RESOLVED and thread.resolved_by:
        lines[0] += f", resolved by {thread.resolved_by}"
    for comment in thread.comments.all():
        when = age(comment.created.timestamp() * 1000, now_ms=now)
        lines.append(f"  {comment.author} ({when}): {comment.body}")
    return "\n".join(lines)
