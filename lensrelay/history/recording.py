"""Recording versions (database side, synchronous) and pruning them to the retention policy.

What to record and when is decided in `lensrelay.history.listen` (in the server process inline, in the
derive process otherwise); these functions are the database side of both.

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
from pycrdt import Doc, Text

from lensrelay.docstore import persistence
from lensrelay.docstore.derived import StateBefore, state_before
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
    before = state_before(doc_id=doc_id, before_id=before_id)
    if before is None or before.state is None:
        return False
    _record_before(doc_id=doc_id, before=before)
    return True


def _record_before(*, doc_id: str, before: StateBefore) -> None:
    assert before.state is not None
    version_record(
        doc_id=doc_id,
        state=before.state,
        upto_update_id=before.upto_update_id,
        authors=before.authors,
        created=before.created,
    )


def version_record_burst_baseline(*, doc_id: str, first_id: int) -> bool | None:
    """The derive process's baseline: the text before an edit burst whose first log row is `first_id`,
    if the document has no version yet (after that, each burst's quiet version is the next one's before).

    True: the document has a version (now). None: not yet, as the burst so far only created the document;
    the text it was created with is the text before its first edit, kept once the burst's next row is
    logged (ask again then). False: never, a compaction folded the rows before the burst meanwhile.
    """
    if DocVersion.objects.filter(doc_id=doc_id).exists():
        return True
    before = state_before(doc_id=doc_id, before_id=first_id)
    if before is None:
        return False
    if before.state is not None:
        _record_before(doc_id=doc_id, before=before)
        return True
    after = (
        YUpdate.objects.filter(doc_id=doc_id, id__gt=first_id)
        .order_by("id")
        .values_list("id", flat=True)
        .first()
    )
    if after is None:
        return None
    return version_record_baseline(doc_id=doc_id, before_id=after)


def version_record_snapshot(*, doc_id: str, authors: Iterable[tuple[int, str]] = ()) -> DocVersion | None:
    """Record the document's snapshot (the state its latest compaction folded), when the derive process
    reads that it was compacted; `authors` are (log id, author) of the rows it read of the document."""
    snapshot = (
        YSnapshot.objects.filter(doc_id=doc_id).values_list("data", "upto_update_id", "updated").first()
    )
    if snapshot is None:
        return None
    data, upto, updated = snapshot
    return version_record(
        doc_id=doc_id, state=bytes(data), upto_update_id=upto, authors=authors, created=updated
    )


def snapshots_of(*, doc_ids: list[str]) -> dict[str, int]:
    """The last log id each document's snapshot includes (documents never compacted are left out)."""
    found: dict[str, int] = {}
    for start in range(0, len(doc_ids), 500):
        found.update(
            YSnapshot.objects.filter(doc_id__in=doc_ids[start : start + 500]).values_list(
                "doc_id", "upto_update_id"
            )
        )
    return found


@dataclass(frozen=True)
class Unversioned:
    """A document's log rows after its newest version: (log id, author, logged at), oldest first."""

    doc_id: str
    rows: list[tuple[int, str, datetime]]


@dataclass(frozen=True)
class Unrecorded:
    documents: list[Unversioned]
    newest: dict[str, int]  # the newest version's log id, of every versioned document in the log


def versions_unrecorded() -> Unrecorded:
    """Every versioned document with log rows after its newest version: the edit bursts a derive process
    that stopped (killed, restarted) had not yet kept, found again from the database. (The log holds a
    few hundred rows per document at most: compaction folds the rest.)"""
    rows = list(
        YUpdate.objects.filter(doc_id__in=YDoc.objects.filter(kind__in=VERSIONED_KINDS).values("doc_id"))
        .order_by("id")
        .values_list("id", "doc_id", "author", "created")
    )
    docs = sorted({doc_id for _, doc_id, _, _ in rows})
    newest: dict[str, int] = {}
    for start in range(0, len(docs), 500):
        newest.update(
            DocVersion.objects.filter(doc_id__in=docs[start : start + 500])
            .values("doc_id")
            .annotate(m=Max("upto_update_id"))
            .values_list("doc_id", "m")
        )
    found: dict[str, Unversioned] = {}
    for row_id, doc_id, author, created in rows:
        if row_id > newest.get(doc_id, 0):
            found.setdefault(doc_id, Unversioned(doc_id, [])).rows.append((row_id, author, created))
    # A document with no version, no snapshot and one logged row is only created (an import leaves
    # thousands): nothing to keep, its text is that row (kept as the baseline once it is edited).
    just_made = sorted(doc_id for doc_id, u in found.items() if doc_id not in newest and len(u.rows) == 1)
    compacted: set[str] = set()
    for start in range(0, len(just_made), 500):
        compacted.update(
            YSnapshot.objects.filter(doc_id__in=just_made[start : start + 500]).values_list(
                "doc_id", flat=True
            )
        )
    for doc_id in set(just_made) - compacted:
        del found[doc_id]
    return Unrecorded(documents=list(found.values()), newest=newest)


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
