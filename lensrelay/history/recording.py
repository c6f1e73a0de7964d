"""Recording versions (database side, synchronous) and pruning them to the retention policy.

Several workers may try to record the same state (each compacts, each sees the same edit burst go quiet):
the document's YDoc row is locked while the newest version is compared and the new one written, so one
of them records it and the others find its text already there. Recording runs after a compaction has
committed, never inside it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from pycrdt import Doc, Text, merge_updates

from lensrelay.docstore import persistence
from lensrelay.history.models import DocVersion
from lensrelay.models import YDoc, YSnapshot, YUpdate

CONTENTS = "contents"
# Folder documents hold maps (paths, links), not a text a person would restore.
VERSIONED_KINDS = (YDoc.Kind.CONTENT, YDoc.Kind.STANDALONE)


def state_text(state: bytes) -> str:
    doc: Doc[Any] = Doc()
    doc.apply_update(state)
    return str(doc.get(CONTENTS, type=Text))


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Retention:
    keep_all_days: float
    max_count: int

    @classmethod
    def from_settings(cls) -> Retention:
        return cls(
            keep_all_days=settings.LENSRELAY_VERSIONS_KEEP_ALL_DAYS, max_count=settings.LENSRELAY_VERSIONS_MAX
        )


def version_record(
    *,
    doc_id: str,
    state: bytes,
    upto_update_id: int,
    authors: Iterable[tuple[int, str]] = (),
    created: datetime | None = None,
) -> DocVersion | None:
    """Keep `state` as a version of the document, unless the newest version has its text already or is of
    a later state. `authors` are (log id, author) of the changes it includes: those after the newest
    version name who made it. Returns the new version, or None.
    """
    if persistence.doc_kind(doc_id) not in VERSIONED_KINDS:
        return None  # checked before decoding: folder documents are compacted often
    text = state_text(state)  # decoded before the lock: it may take a while on a long document
    digest = text_digest(text)
    with transaction.atomic():
        kind = YDoc.objects.select_for_update().filter(doc_id=doc_id).values_list("kind", flat=True).first()
        if kind not in VERSIONED_KINDS:
            return None
        newest = DocVersion.objects.filter(doc_id=doc_id).order_by("-upto_update_id").first()
        if newest is not None and (newest.text_hash == digest or newest.upto_update_id >= upto_update_id):
            return None
        since = newest.upto_update_id if newest is not None else 0
        names = sorted(
            {name.strip() for row_id, joined in authors if row_id > since for name in joined.split(",")}
        )
        version = DocVersion.objects.create(
            doc_id=doc_id,
            created=created or timezone.now(),
            upto_update_id=upto_update_id,
            state=state,
            size=len(text.encode()),
            text_hash=digest,
            author=", ".join(n for n in names if n)[:500],
        )
        versions_prune(doc_id=doc_id, retention=Retention.from_settings())
    return version


def version_record_stored(*, doc_id: str) -> DocVersion | None:
    """Record the document's stored state (after an edit burst went quiet); authors from its log."""
    since = DocVersion.objects.filter(doc_id=doc_id).aggregate(m=Max("upto_update_id"))["m"] or 0
    # The authors are read before the state, as load_state reads the log before the snapshot.
    authors = list(YUpdate.objects.filter(doc_id=doc_id, id__gt=since).values_list("id", "author"))
    stored = persistence.load_state(doc_id)
    if stored.update is None:
        return None
    return version_record(
        doc_id=doc_id, state=stored.update, upto_update_id=stored.last_update_id, authors=authors
    )


def version_record_baseline(*, doc_id: str, before_id: int) -> bool:
    """Record the text as it was before the log row `before_id` (a process's first change of the document
    it has seen logged), if the document has no version yet.

    Called on a process's first edits of a document: without it the first version would already hold
    the first burst of edits, and the imported (or created) text could never be restored. The log rows
    before that change make the state, unless a compaction folded them meanwhile. Returns whether the
    document has a version now (False: nothing before the change, as when it was just created).
    """
    if DocVersion.objects.filter(doc_id=doc_id).exists():
        return True
    rows = list(
        YUpdate.objects.filter(doc_id=doc_id, id__lt=before_id)
        .order_by("id")
        .values_list("id", "data", "author", "created")
    )
    snapshot = (
        YSnapshot.objects.filter(doc_id=doc_id).values_list("data", "upto_update_id", "updated").first()
    )
    if snapshot is not None and snapshot[1] >= before_id:
        return False
    updates = ([bytes(snapshot[0])] if snapshot else []) + [bytes(data) for _, data, _, _ in rows]
    if not updates:
        return False
    state = updates[0] if len(updates) == 1 else merge_updates(*updates)
    upto = max([snapshot[1] if snapshot else 0, *(row_id for row_id, _, _, _ in rows)])
    moments = [created for _, _, _, created in rows] + ([snapshot[2]] if snapshot else [])
    version_record(
        doc_id=doc_id,
        state=state,
        upto_update_id=upto,
        authors=[(row_id, author) for row_id, _, author, _ in rows],
        created=max(moments),
    )
    return True


def on_compacted(done: persistence.Compacted) -> None:
    version_record(
        doc_id=done.doc_id, state=done.state, upto_update_id=done.upto_update_id, authors=done.authors
    )


def versions_prune(*, doc_id: str, retention: Retention, now: datetime | None = None) -> int:
    """Apply the retention policy to one document's versions; returns how many were deleted.

    Kept: the newest version always; every version younger than `keep_all_days`; the newest version of
    each (UTC) day before that; and of those, at most `max_count`, newest first.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(days=retention.keep_all_days)
    rows = list(
        DocVersion.objects.filter(doc_id=doc_id).order_by("-created", "-id").values_list("id", "created")
    )
    kept: list[int] = []
    days: set[date] = set()
    for index, (pk, created) in enumerate(rows):
        day = created.astimezone(UTC).date()
        if index == 0 or created >= cutoff or day not in days:
            kept.append(pk)
        days.add(day)
    kept = kept[: max(1, retention.max_count)]
    doomed = [pk for pk, _ in rows if pk not in set(kept)]
    if doomed:
        DocVersion.objects.filter(id__in=doomed).delete()
    return len(doomed)
