"""The outbox's writing side: record an event in the caller's transaction, or nothing when no endpoint
wants its type.

Called inside the transaction that makes the change (a suggestion's row, the folder mirror moving
`Document` rows), so the event exists exactly when the change does: a crash loses both or neither.
Delivery is the loop's business (`delivery.py`); writers never wait on it. Payloads are built here so
every writer describes a document the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from lensrelay.docstore.trashdoc import is_trashed
from lensrelay.webhooks.models import EventType, WebhookEndpoint, WebhookEvent


@dataclass(frozen=True)
class FolderName:
    id: int
    name: str


@dataclass(frozen=True)
class Relocated:
    """A document row whose path changed: (doc id, entry type, old path, new path), folder-relative."""

    doc_id: str
    type: str
    old: str
    new: str


def wanted_types() -> set[str]:
    """The event types some enabled endpoint receives (one small query; endpoints are few)."""
    wanted: set[str] = set()
    for types in WebhookEndpoint.objects.filter(enabled=True).values_list("event_types", flat=True):
        if isinstance(types, list):
            wanted.update(str(t) for t in types)
    return wanted


def event_record(
    *,
    type: str,
    data: dict[str, Any],
    folder_id: int | None,
    other_folder_id: int | None = None,
    doc_id: str = "",
    wanted: set[str] | None = None,
    at: datetime | None = None,
) -> WebhookEvent | None:
    """Put one event in the outbox (in the caller's transaction); None when no endpoint wants the type."""
    if type not in (wanted if wanted is not None else wanted_types()):
        return None
    now = at or timezone.now()
    return WebhookEvent.objects.create(
        type=type,
        data=data,
        folder_id=folder_id,
        other_folder_id=other_folder_id,
        doc_id=doc_id,
        created=now,
        not_before=now,
    )


def document_data(*, doc_id: str, type: str, folder: FolderName, path: str) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
        "type": type,
        "folder": folder.name,
        "folder_id": folder.id,
        "path": path,
        "user_path": f"{folder.name}{path}",
    }


def documents_relocated(*, folder: FolderName, changes: Iterable[Relocated]) -> int:
    """Events for rows whose path changed within one folder (the mirror's transaction): into the trash is
    `document.trashed`, out of it `document.restored`, anything else `document.moved`. Sub-folder
    entries and moves inside the trash tell nothing. Returns how many were recorded."""
    listed = [c for c in changes if c.type != "folder"]
    if not listed:
        return 0
    wanted = wanted_types()
    if not wanted:
        return 0
    recorded = 0
    for change in listed:
        was, now = is_trashed(change.old), is_trashed(change.new)
        if was and now:
            continue
        if now:
            kind = EventType.DOCUMENT_TRASHED
            data = {
                **document_data(doc_id=change.doc_id, type=change.type, folder=folder, path=change.old),
                "trash_path": change.new,
            }
        elif was:
            kind = EventType.DOCUMENT_RESTORED
            data = {
                **document_data(doc_id=change.doc_id, type=change.type, folder=folder, path=change.new),
                "trash_path": change.old,
            }
        else:
            kind = EventType.DOCUMENT_MOVED
            data = {
                **document_data(doc_id=change.doc_id, type=change.type, folder=folder, path=change.new),
                "from": {"folder": folder.name, "folder_id": folder.id, "path": change.old},
            }
        event = event_record(type=kind, data=data, folder_id=folder.id, doc_id=change.doc_id, wanted=wanted)
        recorded += event is not None
    return recorded


def documents_moved_between(*, source: FolderName, target: FolderName, changes: Iterable[Relocated]) -> int:
    """`document.moved` for rows moved from one folder to another (the move service's transaction). The
    event names both folders, so only endpoints given both receive it."""
    listed = [c for c in changes if c.type != "folder"]
    wanted = wanted_types() if listed else set()
    recorded = 0
    for change in listed:
        data = {
            **document_data(doc_id=change.doc_id, type=change.type, folder=target, path=change.new),
            "from": {"folder": source.name, "folder_id": source.id, "path": change.old},
        }
        event = event_record(
            type=EventType.DOCUMENT_MOVED,
            data=data,
            folder_id=target.id,
            other_folder_id=source.id,
            doc_id=change.doc_id,
            wanted=wanted,
        )
        recorded += event is not None
    return recorded
