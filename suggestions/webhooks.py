"""Webhook events of suggestions and threads, each written to lensrelay's outbox in the transaction that
records it: `suggestion.created` when a proposal is saved, `suggestion.decided` when it leaves pending
(accepted, rejected, stale or superseded), `suggestion.reopened` when a decision is undone (pending again,
its markup back in the text), `suggestion.reverted` when an accepted change is rolled back (the old text
back); `comment.created` when a thread's comment gets its row, `comment.resolved` when a thread is resolved.

`suggestion_created_record` is called where rows are made: an assistant's proposal
(`proposing._save_suggestion`) and a person's suggesting (`lifecycle.suggesting`); the others arrive
through `suggestion_decided`, which every deciding, undoing and rolling-back path sends inside its
transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils import timezone

from lensrelay.webhooks.events import event_record, wanted_types
from lensrelay.webhooks.models import EventType
from suggestions.markup.revising import revision_changes
from suggestions.models import Suggestion, Thread, ThreadComment
from suggestions.signals import suggestion_decided

# Texts in a payload are clipped to this many characters (`text_truncated` says so); the document itself
# is where the whole text is.
TEXT_CHARS = 10_000
FINAL = (
    Suggestion.Status.ACCEPTED,
    Suggestion.Status.REJECTED,
    Suggestion.Status.STALE,
    Suggestion.Status.SUPERSEDED,
)
# What `suggestion_decided` can mean for a row, by the row's status after the change.
TOLD_BY_THE_SIGNAL = {
    EventType.SUGGESTION_DECIDED,
    EventType.SUGGESTION_REOPENED,
    EventType.SUGGESTION_REVERTED,
}


def _clip(text: str) -> tuple[str, bool]:
    return text[:TEXT_CHARS], len(text) > TEXT_CHARS


def _person_of(suggestion: Suggestion) -> dict[str, Any] | None:
    return {"id": suggestion.person_id, "username": suggestion.author} if suggestion.person_id else None


def suggestion_data(suggestion: Suggestion) -> dict[str, Any]:
    old_text, old_cut = _clip(suggestion.old_text)
    new_text, new_cut = _clip(suggestion.new_text)
    folder = suggestion.folder
    return {
        "id": suggestion.uid,
        "kind": suggestion.kind,
        "status": suggestion.status,
        "doc_id": suggestion.doc_id,
        "folder": folder.name if folder is not None else None,
        "folder_id": suggestion.folder_id,
        "path": suggestion.path,
        "new_path": suggestion.new_path or None,
        "author": suggestion.author,
        # A person's suggestion (typed in suggesting mode) names them; an assistant's has its token instead.
        "person": _person_of(suggestion),
        "client_name": suggestion.client_name,
        "token_id": suggestion.token_id,
        "tool": suggestion.tool,
        "comment": suggestion.comment,
        "old_text": old_text,
        "new_text": new_text,
        "text_truncated": old_cut or new_cut,
        "created": suggestion.created.isoformat(),
    }


def suggestion_created_record(*, suggestion: Suggestion) -> None:
    """In the transaction that saves the new row."""
    event_record(
        type=EventType.SUGGESTION_CREATED,
        data={"suggestion": suggestion_data(suggestion)},
        folder_id=suggestion.folder_id,
        doc_id=suggestion.doc_id,
    )


def thread_data(thread: Thread) -> dict[str, Any]:
    passage, cut = _clip(thread.passage)
    return {
        "id": thread.uid,
        "doc_id": thread.doc_id,
        "folder_id": thread.folder_id,
        "path": thread.path,
        "passage": passage,
        "text_truncated": cut,
        "suggestion": thread.suggestion.uid if thread.suggestion_id and thread.suggestion else None,
        "status": thread.status,
        "detached": thread.detached,
        "author": thread.author,
        "created": thread.created.isoformat(),
    }


def comment_data(comment: ThreadComment) -> dict[str, Any]:
    body, cut = _clip(comment.body)
    return {
        "id": comment.uid,
        "author": comment.author,
        "person": {"id": comment.person_id, "username": comment.author} if comment.person_id else None,
        "token_id": comment.token_id,
        "body": body,
        "text_truncated": cut,
        "mentions": list(comment.mentions or []),
        "created": comment.created.isoformat(),
    }


def comment_created_record(*, comment: ThreadComment) -> None:
    """In the transaction that saves the comment's row."""
    thread = comment.thread
    event_record(
        type=EventType.COMMENT_CREATED,
        data={"thread": thread_data(thread), "comment": comment_data(comment)},
        folder_id=thread.folder_id,
        doc_id=thread.doc_id,
    )


def comment_resolved_record(*, thread: Thread) -> None:
    """In the transaction that records the thread as resolved."""
    resolution = {
        "at": thread.resolved_at.isoformat() if thread.resolved_at else None,
        "by": thread.resolved_by,
    }
    event_record(
        type=EventType.COMMENT_RESOLVED,
        data={"thread": thread_data(thread), "resolved": resolution},
        folder_id=thread.folder_id,
        doc_id=thread.doc_id,
    )


def _person(user: Any) -> dict[str, Any] | None:
    return {"id": user.pk, "username": user.get_username()} if user is not None else None


def _event_of(row: Suggestion, *, by: Any, undone: str) -> tuple[str, dict[str, Any]] | None:
    """The event a row's signal means now, by its status: None for a row still being decided."""
    if row.status in FINAL:
        decision = {
            "status": row.status,
            "decided_at": row.decided_at.isoformat() if row.decided_at else None,
            "reviewer": _person(row.decided_by),
            "note": row.note,
            "accepted_with_changes": row.accepted_with_changes,
            "changes": revision_changes(row.proposed_insertions(), row.revision),
            "superseded_by": row.superseded_by.uid if row.superseded_by_id and row.superseded_by else None,
        }
        return EventType.SUGGESTION_DECIDED, {"decision": decision}
    if row.status == Suggestion.Status.PENDING and undone:
        reopened = {"status": undone, "at": timezone.now().isoformat(), "by": _person(by)}
        return EventType.SUGGESTION_REOPENED, {"undone": reopened}
    if row.status == Suggestion.Status.REVERTED:
        at = row.rolled_back_at.isoformat() if row.rolled_back_at else None
        return EventType.SUGGESTION_REVERTED, {"reverted": {"at": at, "by": _person(row.rolled_back_by)}}
    return None


def suggestion_decided_record(*, pks: Sequence[int], by: Any = None, undone: str = "") -> None:
    """In the transaction that records the decisions (or the undo, or the rollback): one event per row."""
    wanted = wanted_types()
    if not wanted & TOLD_BY_THE_SIGNAL:
        return
    rows = Suggestion.objects.select_related("folder", "decided_by", "superseded_by", "rolled_back_by")
    for row in rows.filter(pk__in=list(pks)):
        event = _event_of(row, by=by, undone=undone)
        if event is None:
            continue
        event_type, details = event
        event_record(
            type=event_type,
            data={"suggestion": suggestion_data(row), **details},
            folder_id=row.folder_id,
            doc_id=row.doc_id,
            wanted=wanted,
        )


def _decided(sender: Any, *, pks: Sequence[int], by: Any = None, undone: str = "", **kwargs: Any) -> None:
    suggestion_decided_record(pks=pks, by=by, undone=undone)


suggestion_decided.connect(_decided, dispatch_uid="suggestions.webhooks.decided")
