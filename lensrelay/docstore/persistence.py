"""Database side of the document store. Synchronous: callers run it off the event loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from pycrdt import Doc, Text, merge_updates

from lensrelay.models import Document, YDoc, YSnapshot, YUpdate


@dataclass(frozen=True)
class StoredState:
    update: bytes | None
    last_update_id: int
    log_rows: int


def _merged(updates: list[bytes]) -> bytes | None:
    if not updates:
        return None
    return updates[0] if len(updates) == 1 else merge_updates(*updates)


def doc_kind(doc_id: str) -> str | None:
    return YDoc.objects.filter(doc_id=doc_id).values_list("kind", flat=True).first()


def load_state(doc_id: str) -> StoredState:
    snapshot = YSnapshot.objects.filter(doc_id=doc_id).first()
    after = snapshot.upto_update_id if snapshot else 0
    rows = list(YUpdate.objects.filter(doc_id=doc_id, id__gt=after).order_by("id").values_list("id", "data"))
    updates = ([bytes(snapshot.data)] if snapshot else []) + [bytes(data) for _, data in rows]
    last_id = rows[-1][0] if rows else after
    return StoredState(update=_merged(updates), last_update_id=last_id, log_rows=len(rows))


def stored_text(doc_id: str, *, name: str = "contents") -> str | None:
    """A content document's text as persisted (every change is logged before anyone sees it)."""
    state = load_state(doc_id)
    if state.update is None:
        return None
    doc: Doc[Any] = Doc()
    doc.apply_update(state.update)
    return str(doc.get(name, type=Text))


def stored_texts(doc_ids: list[str], *, name: str = "contents") -> dict[str, str]:
    """Many documents' texts in a few queries (for warming caches and indexes after an import)."""
    texts: dict[str, str] = {}
    for start in range(0, len(doc_ids), 500):
        chunk = doc_ids[start : start + 500]
        snapshots = {
            s.doc_id: (bytes(s.data), s.upto_update_id) for s in YSnapshot.objects.filter(doc_id__in=chunk)
        }
        updates: dict[str, list[bytes]] = {doc_id: [] for doc_id in chunk}
        rows = YUpdate.objects.filter(doc_id__in=chunk).order_by("id").values_list("doc_id", "id", "data")
        for doc_id, row_id, data in rows:
            if row_id > snapshots.get(doc_id, (b"", 0))[1]:
                updates[doc_id].append(bytes(data))
        for doc_id in chunk:
            doc: Doc[Any] = Doc()
            if doc_id in snapshots:
                doc.apply_update(snapshots[doc_id][0])
            for update in updates[doc_id]:
                doc.apply_update(update)
            texts[doc_id] = str(doc.get(name, type=Text))
    return texts


def append_update(doc_id: str, update: bytes, *, is_content: bool, writer: str) -> int:
    """Log one update durably; returns its id. Content documents also get their modified time bumped."""
    with transaction.atomic():
        row = YUpdate.objects.create(doc_id=doc_id, data=update, writer=writer)
        if is_content:
            touch_modified(doc_id)
    return row.id


def touch_modified(doc_id: str) -> None:
    Document.objects.filter(doc_id=doc_id).update(modified=timezone.now())


def compact(doc_id: str) -> int:
    """Merge the snapshot and the log into a new snapshot; returns how many log rows were folded in."""
    with transaction.atomic():
        snapshot = YSnapshot.objects.select_for_update().filter(doc_id=doc_id).first()
        after = snapshot.upto_update_id if snapshot else 0
        upto = YUpdate.objects.filter(doc_id=doc_id, id__gt=after).aggregate(m=Max("id"))["m"]
        if upto is None:
            return 0
        rows = list(
            YUpdate.objects.filter(doc_id=doc_id, id__gt=after, id__lte=upto)
            .order_by("id")
            .values_list("data", flat=True)
        )
        updates = ([bytes(snapshot.data)] if snapshot else []) + [bytes(d) for d in rows]
        merged = _merged(updates)
        assert merged is not None
        YSnapshot.objects.update_or_create(
            doc_id=doc_id,
            defaults={"data": merged, "upto_update_id": upto, "updated": timezone.now()},
        )
        YUpdate.objects.filter(doc_id=doc_id, id__lte=upto).delete()
    return len(rows)


def foreign_updates(*, after_id: int, writer: str, limit: int = 2000) -> list[tuple[int, str, bytes]]:
    """Updates logged by other processes (other workers, management commands) after `after_id`."""
    rows = (
        YUpdate.objects.filter(id__gt=after_id)
        .exclude(writer=writer)
        .order_by("id")
        .values_list("id", "doc_id", "data")[:limit]
    )
    return [(row_id, doc_id, bytes(data)) for row_id, doc_id, data in rows]


def last_update_id() -> int:
    return YUpdate.objects.aggregate(m=Max("id"))["m"] or 0


def create_ydoc(doc_id: str, kind: str) -> bool:
    """Register a document id; returns True if it was new."""
    _, created = YDoc.objects.get_or_create(doc_id=doc_id, defaults={"kind": kind})
    return created
