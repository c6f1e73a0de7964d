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
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, OuterRef, Subquery
from django.utils import timezone
from pycrdt import Doc, Text

from lensrelay.docstore import persistence
from lensrelay.docstore.derived import StateBefore, state_before
from lensrelay.docstore.inlists import in_chunks, rows_in
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.serverbound import server_bound_rows, text_array_literal
from lensrelay.history.models import DocVersion
from lensrelay.models import YDoc, YSnapshot, YUpdate

CONTENTS = "contents"
# Folder documents hold maps (paths, links), not a text a person would restore.
VERSIONED_KINDS = (YDoc.Kind.CONTENT, YDoc.Kind.STANDALONE)

logger = logging.getLogger(__name__)

# Documents whose versions are written per transaction at most: on SQLite a transaction holds the file's one
# write lock, which the server's update log appends wait for (as the search rows' `WRITE_CHUNK`).
VERSIONS_PER_TRANSACTION = 25


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


@dataclass(frozen=True)
class Candidate:
    """A state to keep as a version of its document: the last log id it includes, (log id, author) of the
    changes it includes (those after the newest version name who made it) and when it was made (None: now)."""

    state: bytes
    upto_update_id: int
    authors: Sequence[tuple[int, str]] = ()
    created: datetime | None = None


def version_record(
    *,
    doc_id: str,
    state: bytes,
    upto_update_id: int,
    authors: Iterable[tuple[int, str]] = (),
    created: datetime | None = None,
) -> DocVersion | None:
    """Keep `state` as a version of the document (`versions_record`). Returns the new version, or None."""
    candidate = Candidate(state, upto_update_id, list(authors), created)
    return versions_record(candidates={doc_id: candidate}).get(doc_id)


def versions_record(
    *, candidates: Mapping[str, Candidate], only_first: bool = False
) -> dict[str, DocVersion]:
    """Keep each state as a version of its document, `VERSIONS_PER_TRANSACTION` documents to a transaction,
    unless the document is not versioned or its newest version has its text already or is of a later state
    (`only_first`: unless it has a version at all). Returns the versions kept, by document.

    The documents' YDoc rows are locked while their newest versions are compared and the new ones written:
    of several workers recording the same state, one keeps it and the others find its text there.
    """
    ids = sorted(candidates)
    kinds = _kinds(ids)  # before decoding: folder documents are compacted often
    texts: dict[str, str] = {}
    for doc_id in ids:
        if kinds.get(doc_id) in VERSIONED_KINDS:
            # Decoded before the lock, as a long document takes a while; one that cannot be decoded is left
            # out rather than keeping the others from being kept.
            with failures_logged(logger, "decoding a version of %s", doc_id):
                texts[doc_id] = state_text(candidates[doc_id].state)
    if not texts:
        return {}
    kept: dict[str, DocVersion] = {}
    decoded = sorted(texts)
    for start in range(0, len(decoded), VERSIONS_PER_TRANSACTION):
        chunk = {
            doc_id: (candidates[doc_id], texts[doc_id])
            for doc_id in decoded[start : start + VERSIONS_PER_TRANSACTION]
        }
        kept.update(_write_versions(chunk, only_first=only_first))
    return kept


def _write_versions(chunk: Mapping[str, tuple[Candidate, str]], *, only_first: bool) -> dict[str, DocVersion]:
    """`versions_record`'s transaction, for candidates with their decoded texts."""
    with transaction.atomic():
        kinds = _kinds(sorted(chunk), lock=True)
        newest = _newest_versions(sorted(chunk))
        kept: dict[str, DocVersion] = {}
        for doc_id, (candidate, text) in chunk.items():
            last = newest.get(doc_id)
            if kinds.get(doc_id) not in VERSIONED_KINDS:
                continue
            digest = text_digest(text)
            if last is not None and (only_first or last[1] == digest or last[0] >= candidate.upto_update_id):
                continue
            since = last[0] if last is not None else 0
            names = sorted(
                {
                    name.strip()
                    for row_id, joined in candidate.authors
                    if row_id > since
                    for name in joined.split(",")
                }
            )
            kept[doc_id] = DocVersion(
                doc_id=doc_id,
                created=candidate.created or timezone.now(),
                upto_update_id=candidate.upto_update_id,
                state=candidate.state,
                size=len(text.encode()),
                text_hash=digest,
                author=", ".join(n for n in names if n)[:500],
            )
        DocVersion.objects.bulk_create(kept.values())
        if not only_first:  # a first version is the newest, which retention always keeps
            _prune(sorted(kept), retention=Retention.from_settings())
    return kept


def _kinds(doc_ids: Sequence[str], *, lock: bool = False) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in in_chunks(doc_ids):
        rows = YDoc.objects.filter(doc_id__in=part).order_by("doc_id")
        found.update((rows.select_for_update() if lock else rows).values_list("doc_id", "kind"))
    return found


def _newest_versions(doc_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """Each document's newest version: the last log id it includes and its text's digest."""
    newest_upto = (
        DocVersion.objects.filter(doc_id=OuterRef("doc_id"))
        .order_by("-upto_update_id")
        .values("upto_update_id")
    )
    found: dict[str, tuple[int, str]] = {}
    for part in in_chunks(doc_ids):
        rows = DocVersion.objects.filter(doc_id__in=part, upto_update_id=Subquery(newest_upto[:1]))
        found.update(
            (doc_id, (upto, digest))
            for doc_id, upto, digest in rows.values_list("doc_id", "upto_update_id", "text_hash")
        )
    return found


def version_record_stored(*, doc_id: str) -> DocVersion | None:
    """Record the document's stored state (`versions_record_stored`)."""
    return versions_record_stored(doc_ids=[doc_id])[doc_id]


def versions_record_stored(*, doc_ids: Sequence[str]) -> dict[str, DocVersion | None]:
    """Record each document's stored state (after its edit burst went quiet), authors from its log: read in a
    few queries and written in a few transactions, however many documents (a team that stops typing in 300
    notes at once: one at a time that was eleven queries each, issue 36).
    Per document, the version kept, or None."""
    ids = sorted(set(doc_ids))
    candidates: dict[str, Candidate] = {}
    for chunk in in_chunks(ids):
        rows: dict[str, list[tuple[int, bytes, str]]] = {doc_id: [] for doc_id in chunk}
        for doc_id, row_id, data, author in (
            YUpdate.objects.filter(doc_id__in=chunk)
            .order_by("id")
            .values_list("doc_id", "id", "data", "author")
        ):
            rows[doc_id].append((row_id, bytes(data), author))
        # The snapshots after the log, as in `persistence.load_state`: a row compacted away meanwhile is in
        # its snapshot.
        snapshots = {
            doc_id: (bytes(data), upto)
            for doc_id, data, upto in YSnapshot.objects.filter(doc_id__in=chunk).values_list(
                "doc_id", "data", "upto_update_id"
            )
        }
        for doc_id in chunk:
            with failures_logged(logger, "reading the stored state of %s", doc_id):
                logged = rows[doc_id]
                stored = persistence.stored_state([(i, data) for i, data, _ in logged], snapshots.get(doc_id))
                if stored.update is not None:
                    candidates[doc_id] = Candidate(
                        stored.update, stored.last_update_id, [(i, author) for i, _, author in logged]
                    )
    kept = versions_record(candidates=candidates)
    return {doc_id: kept.get(doc_id) for doc_id in ids}


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


def version_record_burst_baselines(*, first_ids: Mapping[str, int]) -> dict[str, bool | None]:
    """The derive process's baselines: for each document (doc_id: the first log row of its edit burst), the
    text before the burst, if the document has no version yet (after that, each burst's quiet version is the
    next one's before). Read in a few queries and written in a few transactions, however many documents: one
    at a time, a team starting to type into 300 fresh notes cost the derive process a dozen round trips
    to the database per note (issue 36).

    Per document, True: it has a version (now). None: not yet, as the burst so far only created the
    document; the text it was created with is the text before its first edit, kept once the burst's next row
    is logged (ask again then). False: never, a compaction folded the rows before the burst meanwhile.
    """
    ids = sorted(first_ids)
    answers: dict[str, bool | None] = dict.fromkeys(_with_versions(ids), True)
    rest = [doc_id for doc_id in ids if doc_id not in answers]
    logged: dict[str, list[int]] = {doc_id: [] for doc_id in rest}
    for chunk in in_chunks(rest):
        for doc_id, row_id in (
            YUpdate.objects.filter(doc_id__in=chunk).order_by("id").values_list("doc_id", "id")
        ):
            logged[doc_id].append(row_id)
    # The text before the burst is made of the rows before it (and the snapshot); when nothing came before
    # its first row, that row created the document, and the text it made is its first edit's baseline.
    bounds: dict[str, int] = {}
    for doc_id in rest:
        first_id = first_ids[doc_id]
        if any(row_id < first_id for row_id in logged[doc_id]):
            bounds[doc_id] = first_id
        elif after := next((row_id for row_id in logged[doc_id] if row_id > first_id), 0):
            bounds[doc_id] = after
    wanted = [row_id for doc_id, bound in bounds.items() for row_id in logged[doc_id] if row_id < bound]
    rows: dict[int, tuple[bytes, str, datetime]] = {}
    for row_ids in in_chunks(wanted):
        for row_id, data, author, created in YUpdate.objects.filter(id__in=row_ids).values_list(
            "id", "data", "author", "created"
        ):
            rows[row_id] = (bytes(data), author, created)
    # Snapshots last: a row compacted away since it was listed is in its document's snapshot.
    snapshots = {
        doc_id: (bytes(data), upto, updated)
        for doc_id, data, upto, updated in YSnapshot.objects.filter(doc_id__in=rest).values_list(
            "doc_id", "data", "upto_update_id", "updated"
        )
    }
    befores: dict[str, StateBefore] = {}
    for doc_id in rest:
        snapshot = snapshots.get(doc_id)
        bound = first_ids[doc_id] if snapshot is not None else bounds.get(doc_id, 0)
        if not bound:
            answers[doc_id] = None  # only created so far
            continue
        if snapshot is not None and snapshot[1] >= bound:
            answers[doc_id] = False
            continue
        mine = [(row_id, *rows[row_id]) for row_id in logged[doc_id] if row_id < bound and row_id in rows]
        before = StateBefore.made_of(snapshot, mine)
        if before.state is None:
            answers[doc_id] = False  # its rows went (a purge) while they were read
            continue
        befores[doc_id] = before
        answers[doc_id] = True
    versions_record(
        candidates={
            doc_id: Candidate(before.state or b"", before.upto_update_id, before.authors, before.created)
            for doc_id, before in befores.items()
        },
        only_first=True,
    )
    return answers


def _with_versions(doc_ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in in_chunks(doc_ids):
        found.update(
            DocVersion.objects.filter(doc_id__in=chunk).order_by().values_list("doc_id", flat=True).distinct()
        )
    return found


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
    """The last log id each document's snapshot includes (documents never compacted are left out).

    The derive process asks this every pass about every document being typed into: on PostgreSQL one
    statement bound on the server, not the ORM quoting hundreds of ids into the SQL in Python; elsewhere
    plain statements, which cost a tenth of the ORM's for the few ids of a quiet pass (issue 36)."""
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(YSnapshot._meta.db_table)
        rows = server_bound_rows(
            f'SELECT "doc_id", "upto_update_id" FROM {table} WHERE "doc_id" = ANY(%s::text[])',
            [text_array_literal(doc_ids)],
        )
        return {doc_id: upto for doc_id, upto in rows}
    table = connection.ops.quote_name(YSnapshot._meta.db_table)
    return dict(rows_in(f"SELECT doc_id, upto_update_id FROM {table} WHERE doc_id IN ({{ids}})", doc_ids))


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
    for part in in_chunks(docs):
        newest.update(
            DocVersion.objects.filter(doc_id__in=part)
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
    for part in in_chunks(just_made):
        compacted.update(YSnapshot.objects.filter(doc_id__in=part).values_list("doc_id", flat=True))
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
    return _prune([doc_id], retention=retention, now=now)


def _prune(doc_ids: Sequence[str], *, retention: Retention, now: datetime | None = None) -> int:
    now = now or timezone.now()
    cutoff = now - timedelta(days=retention.keep_all_days)
    doomed: list[int] = []
    for part in in_chunks(doc_ids):
        rows = DocVersion.objects.filter(doc_id__in=part).order_by("doc_id", "-created", "-id")
        of_doc: dict[str, list[tuple[int, datetime]]] = {}
        for doc_id, pk, created in rows.values_list("doc_id", "id", "created"):
            of_doc.setdefault(doc_id, []).append((pk, created))
        for versions in of_doc.values():
            doomed.extend(_doomed(versions, cutoff=cutoff, max_count=retention.max_count))
    for ids in in_chunks(doomed):
        DocVersion.objects.filter(id__in=ids).delete()
    return len(doomed)


def _doomed(versions: Sequence[tuple[int, datetime]], *, cutoff: datetime, max_count: int) -> list[int]:
    """Of one document's versions (id, created; newest first), those the retention policy drops."""
    kept: list[int] = []
    days: set[date] = set()
    for index, (pk, created) in enumerate(versions):
        day = created.astimezone(UTC).date()
        if index == 0 or created >= cutoff or day not in days:
            kept.append(pk)
        days.add(day)
    keep = set(kept[: max(1, max_count)])
    return [pk for pk, _ in versions if pk not in keep]
