"""What the review page shows: a note's pending suggestions (or one suggestion), each change as the lines
around it with the deleted text and the inserted text, read from the live note. Plain strings only: the
page renders every one as text, never as markup."""

from __future__ import annotations

from pydantic import BaseModel, Field

from suggestions.markup.accepted_view import build_accepted_view
from suggestions.markup.criticmarkup import mark_id
from suggestions.models import Suggestion

# Lines of context either side of a change, and at most this many characters of them.
CONTEXT_LINES = 2
CONTEXT_MAX_CHARS = 300


class ShownChange(BaseModel):
    before: str = Field(description="The text just before the change, as the note reads")
    deleted: str
    inserted: str
    after: str = Field(description="The text just after the change")


class ShownSuggestion(BaseModel):
    id: str
    kind: str
    status: str
    author: str
    created: str
    reason: str = Field(description="Why the assistant proposed it (its comment)")
    decided_by: str | None
    changes: list[ShownChange]


class ReviewOutput(BaseModel):
    path: str
    query: dict[str, str] = Field(description="The arguments that show this review again")
    suggestions: list[ShownSuggestion]
    can_decide: bool = Field(description="Whether this session may accept or reject from the review app")
    why_not: str = Field(description="Why it may not (empty when it may)")


def _before(text: str, start: int) -> str:
    """The start of the change's line and the CONTEXT_LINES lines above it."""
    begin = start
    for _ in range(CONTEXT_LINES + 1):
        newline = text.rfind("\n", 0, begin)
        if newline < 0:
            begin = 0
            break
        begin = newline
    else:
        begin += 1
    return text[max(begin, start - CONTEXT_MAX_CHARS) : start]


def _after(text: str, end: int) -> str:
    """The rest of the change's line and the CONTEXT_LINES lines below it."""
    finish = end
    for _ in range(CONTEXT_LINES + 1):
        newline = text.find("\n", finish)
        if newline < 0:
            finish = len(text)
            break
        finish = newline + 1
    else:
        finish -= 1
    return text[end : min(finish, end + CONTEXT_MAX_CHARS)]


def shown_changes(raw: str, uid: str) -> list[ShownChange]:
    """The suggestion's changes in the note `raw`, with their context as the note reads with every pending
    change accepted (the same view the assistant reads)."""
    view = build_accepted_view(raw)
    shown = []
    for change, (start, end) in zip(view.changes, view.change_spans, strict=True):
        if not any(mark_id(mark) == uid for mark in change.all_marks):
            continue
        # In the view the change's span holds its inserted text; the deleted text is not in it.
        shown.append(
            ShownChange(
                before=_before(view.text, start),
                deleted=change.old,
                inserted=change.new,
                after=_after(view.text, end),
            )
        )
    return shown


def shown_suggestion(row: Suggestion, raw: str | None) -> ShownSuggestion:
    """One suggestion; its changes only while it is pending and its note is there (`raw`)."""
    pending = row.status == Suggestion.Status.PENDING
    return ShownSuggestion(
        id=row.uid,
        kind=row.kind,
        status=row.status,
        author=row.author,
        created=row.created.isoformat(),
        reason=row.comment,
        decided_by=row.decided_by.get_username() if row.decided_by is not None else None,
        changes=shown_changes(raw, row.uid) if pending and raw is not None else [],
    )
