"""Webhook events of suggestions: `suggestion.created` when a proposal is saved, `suggestion.decided` when
it leaves pending (accepted, rejected, stale or superseded), each written to lensrelay's outbox in the
transaction that records it.

`suggestion_created_record` is called by the one place rows are saved (`proposing._save_suggestion`);
decisions arrive through `suggestion_decided`, which every deciding path sends inside its transaction.
An undone decision (the suggestion pending again) sends no event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lensrelay.webhooks.events import event_record, wanted_types
from lensrelay.webhooks.models import EventType
from suggestions.models import Suggestion
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


def _clip(text: str) -> tuple[str, bool]:
    return text[:TEXT_CHARS], len(text) > TEXT_CHARS


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


def suggestion_decided_record(*, pks: Sequence[int]) -> None:
    """In the transaction that records the decisions: one event per suggestion now out of pending."""
    wanted = wanted_types()
    if EventType.SUGGESTION_DECIDED not in wanted:
        return
    rows = Suggestion.objects.select_related("folder", "decided_by", "superseded_by").filter(
        pk__in=list(pks), status__in=FINAL
    )
    for row in rows:
        reviewer = row.decided_by
        decision = {
            "status": row.status,
            "decided_at": row.decided_at.isoformat() if row.decided_at else None,
            "reviewer": (
                {"id": reviewer.pk, "username": reviewer.get_username()} if reviewer is not None else None
            ),
            "note": row.note,
            "superseded_by": row.superseded_by.uid if row.superseded_by_id and row.superseded_by else None,
        }
        event_record(
            type=EventType.SUGGESTION_DECIDED,
            data={"suggestion": suggestion_data(row), "decision": decision},
            folder_id=row.folder_id,
            doc_id=row.doc_id,
            wanted=wanted,
        )


def _decided(sender: Any, *, pks: Sequence[int], **kwargs: Any) -> None:
    suggestion_decided_record(pks=pks)


suggestion_decided.connect(_decided, dispatch_uid="suggestions.webhooks.decided")
