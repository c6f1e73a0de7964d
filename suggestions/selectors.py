"""Read-only queries over suggestions and threads: what an assistant proposed, what is pending in a text,
which threads a token or a person may see."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min, QuerySet

from suggestions.kinds import MARKED_KINDS
from suggestions.markup.accepted_view import build_accepted_view
from suggestions.markup.criticmarkup import Change, contains_delimiters, mark_id
from suggestions.markup.integrity import markup_mismatch
from suggestions.models import Suggestion, Thread, ThreadComment

EDIT_KINDS = frozenset({"replace", "insert", "delete", "substitution"})
_LEFTOVER_METADATA = "}@@"  # the end of a mark's metadata, left in text when its opening was deleted


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
    rows: QuerySet[Suggestion] = (
        Suggestion.objects.filter(token_id=token_id)
        .select_related("decided_by", "rolled_back_by")
        .prefetch_related("threads__comments")
    )
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


def threads_in_folders(
    *,
    folder_ids: frozenset[int] | None,
    path: str | None = None,
    status: str | None = None,
    limit: int = 50,
) -> list[Thread]:
    """Threads of the folders ``folder_ids`` (None: every folder), the one changed last first, their
    comments fetched with them. ``path``: a note, or a folder path (everything under it)."""
    rows: QuerySet[Thread] = Thread.objects.select_related("suggestion").prefetch_related("comments")
    if folder_ids is not None:
        rows = rows.filter(folder_id__in=folder_ids)
    if path:
        rows = (
            rows.filter(path=path)
            if path.endswith(".md")
            else rows.filter(path__startswith=path.rstrip("/") + "/")
        )
    if status:
        rows = rows.filter(status=status)
    return list(rows.order_by("-updated", "-pk")[:limit])


def threads_mentioning(*, username: str, limit: int = 100) -> list[Thread]:
    """Open threads in which a comment @mentions ``username``, the one changed last first. (Mentions are a
    JSON list, which SQLite cannot search inside: the comments that mention anyone are read.)"""
    mentioning = ThreadComment.objects.filter(thread__status=Thread.Status.OPEN).exclude(mentions=[])
    pks = {pk for pk, names in mentioning.values_list("thread_id", "mentions") if username in (names or [])}
    rows = Thread.objects.filter(pk__in=pks).prefetch_related("comments").order_by("-updated", "-pk")
    return list(rows[:limit])


def thread_in_folders(*, uid: str, folder_ids: frozenset[int] | None) -> Thread | None:
    """The thread ``uid`` if it lies in one of ``folder_ids``: one of another folder is not found, so its
    existence is not told either."""
    rows = Thread.objects.select_related("suggestion").filter(uid=uid)
    if folder_ids is not None:
        rows = rows.filter(folder_id__in=folder_ids)
    return rows.first()


def thread_or_pending_suggestion(*, uid: str, doc_id: str, suggestion: bool) -> Thread | Suggestion | None:
    """The thread ``uid`` of this note; with ``suggestion``, else its pending suggestion ``uid`` (a reply
    opens its discussion)."""
    thread = Thread.objects.select_related("suggestion").filter(uid=uid, doc_id=doc_id).first()
    if thread is not None or not suggestion:
        return thread
    return Suggestion.objects.filter(uid=uid, doc_id=doc_id, status=Suggestion.Status.PENDING).first()


def suggestion_in_folders(*, uid: str, folder_ids: frozenset[int] | None) -> Suggestion | None:
    rows = Suggestion.objects.filter(uid=uid, kind__in=MARKED_KINDS)
    if folder_ids is not None:
        rows = rows.filter(folder_id__in=folder_ids)
    return rows.first()


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
    uid: str | None = None  # the suggestion's id, as list_suggestions gives it (None: a person's own markup)

    def render(self) -> str:
        markup = (f"{{--{self.old}--}}" if self.old else "") + (f"{{++{self.new}++}}" if self.new else "")
        suffix = f", id {self.uid}" if self.uid else ""
        return f"L{self.line}: {markup} ({self.author}) {self.age}{suffix}"


def pending_in_text(raw: str, rows: Sequence[Suggestion] | None = None) -> list[PendingLine]:
    """The pending edits written in a document's text, at their line in the accepted view.

    With ``rows`` (the document's pending suggestions), markup that is broken is left out: a mark whose
    suggestion is not pending or no longer matches what was proposed, or whose text holds leftovers of
    other markup (a delimiter or metadata swallowed when a person deleted a closing delimiter).
    """
    view = build_accepted_view(raw)
    intact = {row.uid for row in rows or () if markup_mismatch(raw, row, parsed=view.changes) is None}
    lines = []
    line, counted_to = 1, 0  # the spans come in the text's order: count each stretch of it once
    for change, (start, _) in zip(view.changes, view.change_spans, strict=True):
        if change.kind not in EDIT_KINDS or (rows is not None and _broken(change, intact)):
            continue
        line += view.text.count("\n", counted_to, start)
        counted_to = max(counted_to, start)
        metadata = change.metadata or {}
        lines.append(
            PendingLine(
                line=line,
                old=_clip(change.old),
                new=_clip(change.new),
                author=str(metadata.get("author", "unknown")),
                age=age(metadata.get("timestamp")),
                uid=mark_id(change.marks[0]),
            )
        )
    return lines


def _broken(change: Change, intact: set[str]) -> bool:
    if any(contains_delimiters(text) or _LEFTOVER_METADATA in text for text in (change.old, change.new)):
        return True
    uid = mark_id(change.marks[0])
    return uid is not None and uid not in intact  # no id: a person's own markup, with no row behind it


def pending_rows(doc_id: str) -> list[Suggestion]:
    """The document's pending suggestions that have markup in its text."""
    return list(
        Suggestion.objects.filter(doc_id=doc_id, status=Suggestion.Status.PENDING, kind__in=MARKED_KINDS)
    )


def _clip(text: str, limit: int = 80) -> str:
    flat = text.replace("\n", "⏎")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def hunk_previews(suggestion: Suggestion, *, limit: int = 3) -> list[str]:
    """One readable line per hunk (``{--old--}{++new++}``, line breaks shown as ⏎), at most ``limit``."""
    previews = []
    for hunk in (suggestion.hunks or [])[:limit]:
        old, new = hunk.get("old", ""), hunk.get("new", "")
        previews.append((f"{{--{_clip(old)}--}}" if old else "") + (f"{{++{_clip(new)}++}}" if new else ""))
    if len(suggestion.hunks or []) > limit:
        previews.append(f"… and {len(suggestion.hunks) - limit} more")
    return previews


# -- what is waiting for review ----------------------------------------------------------------------------


def pending_suggestions() -> QuerySet[Suggestion]:
    return Suggestion.objects.filter(status=Suggestion.Status.PENDING)


@dataclass(frozen=True)
class FolderPending:
    folder_id: int | None
    folder_name: str
    pending: int
    oldest: datetime


def pending_by_folder() -> list[FolderPending]:
    """Pending counts per folder, with the oldest pending suggestion's time; busiest folders first."""
    rows = (
        pending_suggestions()
        .values("folder_id", "folder__name")
        .annotate(pending=Count("id"), oldest=Min("created"))
        .order_by("-pending", "folder__name")
    )
    return [
        FolderPending(r["folder_id"], r["folder__name"] or "(deleted folder)", r["pending"], r["oldest"])
        for r in rows
    ]


def pending_count_of_document(*, doc_id: str) -> int:
    return pending_suggestions().filter(doc_id=doc_id).count()


def pending_of_document(*, doc_id: str) -> list[Suggestion]:
    return list(pending_suggestions().filter(doc_id=doc_id).order_by("created"))


def stale_of_document(*, doc_id: str) -> list[Suggestion]:
    return list(
        Suggestion.objects.filter(doc_id=doc_id, status=Suggestion.Status.STALE, kind=Suggestion.Kind.EDIT)
    )


def pending_of_folder(*, folder_id: int, limit: int = 100) -> list[Suggestion]:
    return list(pending_suggestions().filter(folder_id=folder_id).order_by("created")[:limit])


def documents_with_pending() -> list[str]:
    """Doc ids with pending suggestions, the one waiting longest first. A new file not yet created (a
    pending create of HTML or JSON, no doc id) has no document to review: its change page shows it."""
    rows = (
        pending_suggestions()
        .exclude(doc_id="")
        .values("doc_id")
        .annotate(oldest=Min("created"))
        .order_by("oldest", "doc_id")
    )
    return [r["doc_id"] for r in rows]


def next_document_with_pending(*, after_doc_id: str | None = None) -> str | None:
    """The document to review after ``after_doc_id``: the next in waiting order, wrapping around; never
    ``after_doc_id`` itself."""
    queue = documents_with_pending()
    if after_doc_id in queue:
        position = queue.index(after_doc_id)
        queue = queue[position + 1 :] + queue[:position]
    return queue[0] if queue else None


def next_pending_suggestion(*, after: Suggestion) -> Suggestion | None:
    """Where a reviewer goes after deciding ``after``: the same document's next pending suggestion, else
    the oldest pending one of the next document."""
    same = pending_suggestions().filter(doc_id=after.doc_id).exclude(pk=after.pk).order_by("created").first()
    if same is not None:
        return same
    doc_id = next_document_with_pending(after_doc_id=after.doc_id)
    if doc_id is None:
        return None
    return pending_suggestions().filter(doc_id=doc_id).order_by("created").first()


@dataclass(frozen=True)
class InboxNote:
    """A note with pending suggestions, as the review inbox lists it: its newest first."""

    doc_id: str
    path: str
    suggestions: list[Suggestion]

    @property
    def newest(self) -> datetime:
        return self.suggestions[0].created


def review_inbox(*, limit: int = 500) -> list[InboxNote]:
    """The pending suggestions of the most recent ``limit``, by note; the note changed last first."""
    rows = pending_suggestions().exclude(doc_id="").order_by("-created", "-pk")[:limit]
    notes: dict[str, InboxNote] = {}
    for row in rows:
        note = notes.setdefault(row.doc_id, InboxNote(row.doc_id, row.path, []))
        note.suggestions.append(row)
    return list(notes.values())


def review_inbox_count() -> int:
    return pending_suggestions().exclude(doc_id="").count()
