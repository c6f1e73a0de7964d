from __future__ import annotations

from typing import Literal

from django.utils import timezone
from pydantic import Field

from lensrelay.text.vaultpath import MAX_PATH_CHARS
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, tool
from suggestions.markup.revising import revision_summary
from suggestions.models import Suggestion
from suggestions.selectors import age, hunk_previews, suggestions_of_token


class ListSuggestionsArgs(ToolArgs):
    path: str | None = Field(
        default=None,
        max_length=MAX_PATH_CHARS,
        description="Only suggestions on this document or folder path",
    )
    status: Literal["pending", "accepted", "rejected", "superseded", "stale", "reverted"] | None = Field(
        default=None, description="Only suggestions with this status"
    )
    limit: int = Field(default=50, ge=1, le=500, description="Most recent first; at most this many")


def discussion(row: Suggestion, *, limit: int = 5) -> list[str]:
    """The last comments of the suggestion's discussion; its own reason is shown as its comment already."""
    comments = [c for thread in row.threads.all() for c in thread.comments.all()]
    if comments and row.comment and comments[0].body == row.comment:
        comments = comments[1:]
    said = [f"{c.author} said: {c.body}" for c in comments]
    if len(said) > limit:
        said = [f"({len(said) - limit} earlier comment(s) in the discussion)", *said[-limit:]]
    return said


@tool(
    name="list_suggestions",
    title="What became of my suggestions",
    description=(
        "Lists the suggestions this token proposed and what became of them: pending, accepted, rejected "
        "(with the reviewer's note), stale (its markup was edited away), superseded by a later one, or "
        "reverted (accepted, then rolled back by staff). An edit accepted with changes shows what the "
        "reviewer changed in your text, as {--yours--}{++theirs++}. What people said about a suggestion "
        "(its discussion: reply takes its id) is listed under it."
    ),
    args=ListSuggestionsArgs,
)
async def list_suggestions(ctx: ToolContext, args: ListSuggestionsArgs) -> str:
    kb = await open_kb()
    rows = await kb.store.db(
        suggestions_of_token,
        token_id=ctx.access.token_id,
        folder_ids=ctx.access.folder_ids,
        path=args.path,
        status=args.status,
        limit=args.limit,
    )
    if not rows:
        return "No suggestions found."
    now_ms = timezone.now().timestamp() * 1000
    lines = [f"{len(rows)} suggestion(s), most recent first:"]
    for row in rows:
        target = f"{row.path} -> {row.new_path}" if row.new_path else row.path
        when = age(row.created.timestamp() * 1000, now_ms=now_ms)
        line = f"- {row.uid} {row.status.upper()} {row.kind} {target} ({when})"
        if row.decided_by is not None:
            line += f", decided by {row.decided_by.get_username()}"
        elif row.status in ("accepted", "rejected"):
            line += ", decided in an editor"
        if row.status == "reverted":
            by = row.rolled_back_by.get_username() if row.rolled_back_by is not None else "a reviewer"
            line += f", then rolled back by {by}"
        if row.accepted_with_changes:
            line += "\n  Accepted with changes: the reviewer changed your text before accepting it: "
            line += revision_summary(row.revised_hunks(), limit=600)
        if row.note:
            line += f"\n  Reviewer's note: {row.note}"
        if row.kind == "edit":
            line += "".join(f"\n  {preview}" for preview in hunk_previews(row))
        line += "".join(f"\n  {said}" for said in discussion(row))
        lines.append(line)
    return "\n".join(lines)
