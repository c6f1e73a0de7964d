from __future__ import annotations

from typing import Literal

from django.utils import timezone
from pydantic import BaseModel, Field, field_validator

from lensrelay.text.vaultpath import MAX_PATH_CHARS
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolResult, tool
from suggestions.markup.revising import revision_changes, revision_summary
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

    @field_validator("path")
    @classmethod
    def _no_nul(cls, path: str | None) -> str | None:
        # No path holds one, and PostgreSQL refuses a query that does (an internal error, not an answer).
        if path is not None and "\x00" in path:
            raise ValueError("a path cannot contain NUL characters")
        return path


class Said(BaseModel):
    author: str
    text: str


class Change(BaseModel):
    proposed: str
    accepted: str
    difference: str


class SuggestionOutput(BaseModel):
    id: str
    status: str
    kind: str
    path: str
    new_path: str | None
    created: str
    decided_by: str | None
    note: str
    accepted_with_changes: bool
    changes: list[Change] = Field(description="What the reviewer changed in your text before accepting it")
    discussion: list[Said] = Field(description="What people said about it (reply takes its id)")


class ListSuggestionsOutput(BaseModel):
    suggestions: list[SuggestionOutput]


def discussion(row: Suggestion) -> list[Said]:
    """The suggestion's discussion; its own reason is shown as its comment already."""
    comments = [c for thread in row.threads.all() for c in thread.comments.all()]
    if comments and row.comment and comments[0].body == row.comment:
        comments = comments[1:]
    return [Said(author=c.author, text=c.body) for c in comments]


def _said_lines(said: list[Said], *, limit: int = 5) -> list[str]:
    lines = [f"{s.author} said: {s.text}" for s in said]
    if len(lines) > limit:
        lines = [f"({len(lines) - limit} earlier comment(s) in the discussion)", *lines[-limit:]]
    return lines


def _structured(row: Suggestion, said: list[Said]) -> SuggestionOutput:
    return SuggestionOutput(
        id=row.uid,
        status=row.status,
        kind=row.kind,
        path=row.path,
        new_path=row.new_path or None,
        created=row.created.isoformat(),
        decided_by=row.decided_by.get_username() if row.decided_by is not None else None,
        note=row.note,
        accepted_with_changes=row.accepted_with_changes,
        changes=[Change(**c) for c in revision_changes(row.proposed_insertions(), row.revision)],
        discussion=said,
    )


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
    output=ListSuggestionsOutput,
)
async def list_suggestions(ctx: ToolContext, args: ListSuggestionsArgs) -> ToolResult:
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
        return ToolResult("No suggestions found.", {"suggestions": []})
    now_ms = timezone.now().timestamp() * 1000
    lines = [f"{len(rows)} suggestion(s), most recent first:"]
    listed: list[SuggestionOutput] = []
    for row in rows:
        said = discussion(row)
        listed.append(_structured(row, said))
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
        line += "".join(f"\n  {said_line}" for said_line in _said_lines(said))
        lines.append(line)
    data = ListSuggestionsOutput(suggestions=listed)
    return ToolResult("\n".join(lines), data.model_dump(), tuple(row.path for row in rows))
