"""Purged documents take their suggestions with them: a suggestion holds the note's text (the passage it
changes, the markup), and a purge leaves nothing of the note anywhere (`lensrelay.vault.purge`)."""

from __future__ import annotations

from typing import Any

from lensrelay.docstore.tombstones import documents_purged
from suggestions.models import Suggestion


def suggestions_forget(*, doc_ids: list[str]) -> int:
    """Delete every suggestion made in these documents, whatever its state; returns how many."""
    deleted, _ = Suggestion.objects.filter(doc_id__in=doc_ids).delete()
    return deleted


def _purged(sender: Any, *, doc_ids: list[str], **kwargs: Any) -> None:
    suggestions_forget(doc_ids=doc_ids)


documents_purged.connect(_purged, dispatch_uid="suggestions.lifecycle.purging.documents_purged")
