"""Tombstones of purged documents: a purged id is never used again.

A purge (`lensrelay.vault.purge`) removes a document's every stored row and keeps only its id here. Every
way a document id comes into being (`POST /doc/new`, a folder entry naming a uuid, a file upload
registering an id, any `YDoc` created through the store) asks these selectors first, so nothing can bring
a purged document back, empty or with what a lingering client still holds.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.dispatch import Signal

from lensrelay.models import PurgedDocument

# Sent with `doc_ids` inside the purge's transaction (and again when a process has dropped its rooms of
# them): the packages and apps built on the store (version history, suggestions) remove what they keep of
# those documents' text. Receivers must be idempotent.
documents_purged = Signal()

# What a client is told: the WebSocket close reason, and the error of a refused creation.
PURGED_REASON = "document purged"
PURGED_MESSAGE = "this document id was purged and cannot be reused"
# Close code for sockets on a purged document (4400-4499: y-websocket does not reconnect).
CLOSE_DOCUMENT_PURGED = 4404


class DocumentPurged(ValueError):
    """Raised when something tries to create or register a purged document id."""

    def __init__(self, doc_id: str) -> None:
        super().__init__(f"{doc_id[:100]}: {PURGED_MESSAGE}")
        self.doc_id = doc_id


def purged_among(doc_ids: Iterable[str]) -> set[str]:
    """The ids of `doc_ids` that were purged (a few queries for any number of ids)."""
    wanted = sorted(set(doc_ids))
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        found.update(PurgedDocument.objects.filter(doc_id__in=chunk).values_list("doc_id", flat=True))
    return found


def document_is_purged(doc_id: str) -> bool:
    return PurgedDocument.objects.filter(doc_id=doc_id).exists()


def refuse_purged(doc_id: str) -> None:
    """Raise DocumentPurged when `doc_id` was purged."""
    if document_is_purged(doc_id):
        raise DocumentPurged(doc_id)


def tombstones_record(*, doc_ids: Iterable[str]) -> None:
    """Remember purged ids (idempotent). Call in the purge's transaction, with the rows' deletion."""
    wanted = sorted(set(doc_ids))
    PurgedDocument.objects.bulk_create(
        [PurgedDocument(doc_id=doc_id) for doc_id in wanted], ignore_conflicts=True
    )
