"""Read-only queries over suggestions: what an assistant proposed, and what is pending in a text."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db.models import QuerySet

from suggestions.accepted_view import build_accepted_view
from suggestions.models import Suggestion

EDIT_KINDS = frozenset({"replace", "insert", "delete", "substitution"})


def suggestions_of_token(
    *,
    token_id: int | None,
    folder_ids: frozenset[int] | None,
    path: str | None = None,
    status: str | None = None,
    limit: int = 50,
) -> list[Suggestion]:
    """The token's suggestions in the folders it sees now (`folder_ids`; None: every folder), so a token
    narrowed away from a folder no longer reads the text it once proposed there."""
    rows: QuerySet[Suggestion] = Suggestion.objects.filter(token_id=token_id).select_related("decided_by")
    if folder_ids is not None:
        rows = rows.filter(folder_id__in=folder_ids)
    if path:
        rows = (
            rows.filter(path__startswith=path.rstrip("/"))
            if not path.endswith(".md")
            else rows.filter(path=path)
        )
    if status:
        rows = rows.filter(status=status)
    return list(rows.order_by("-created")[:limit])


def age(timestamp_ms: int | float | None, *, now_ms: float | None = None) -> str:
    if not timestamp_ms:
        return "unknown age"
    seconds = max(0, ((now_ms or time.time() * 1000) - float(timestamp_ms)) / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


@dataclass(frozen=True)
class PendingLine:
    line: int
    old: str
    new: str
    author: str
    age: str

    def render(self) -> str:
        markup = (f"{{--{self.old}--}}" if self.old else "") + (f"{{++{self.new}++}}" if self.new else "")
        return f"L{self.line}: {markup} ({self.author}) {self.age}"


def pending_in_text(raw: str) -> list[PendingLine]:
    """The pending edits written in a document's text, at their line in the accepted view."""
    view = build_accepted_view(raw)
    lines = []
    for change, (start, _) in zip(view.changes, view.change_spans, strict=True):
        if change.kind not in EDIT_KINDS:
            continue
        metadata = change.metadata or {}
        lines.append(
            PendingLine(
                line=view.text.count("\n", 0, start) + 1,
                old=_clip(change.old),
                new=_clip(change.new),
                author=str(metadata.get("author", "unknown")),
                age=age(metadata.get("timestamp")),
            )
        )
    return lines


def _clip(text: str, limit: int = 80) -> str:
    flat = text.replace("\n", "⏎")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
