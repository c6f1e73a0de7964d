"""When versions are recorded: after every compaction, once an edit burst has been quiet a while
(`LENSRELAY_VERSIONS_QUIET_SECONDS`), and a baseline before a document's first edits.

Where depends on `LENSRELAY_DERIVED_WORK` (lensrelay.docstore.derived):

- ``"process"``: the derive process, as a view following the update log (`VersionsFollower`). A burst is
  a document's log rows since its newest version; it has gone quiet once no row of it was logged for the
  quiet time (by the rows' own timestamps). A compaction it reads keeps the snapshot as a version. The
  baseline is the state before the burst's first row, rebuilt from the snapshot and the log. Nothing is
  kept in the server processes, not per update, not per compaction; a restarted derive process finds the
  bursts it had not kept in the log again (`recording.versions_unrecorded`).
- ``"inline"``: the server process where an edit happened (other workers apply it from the log and stay
  out) gives the document its baseline at the first edit it sees, keeps it waiting in the view's quiet
  debouncer until the burst goes quiet, and its compactions record their snapshot.

Both are installed from the one registration of the view "versions" below.

Either way the database decides between processes that recorded the same text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from lensrelay.docstore import persistence
from lensrelay.docstore.derived import FeedStep, Follows, derived_inline, derived_view
from lensrelay.docstore.later import Debounced
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.tombstones import documents_purged
from lensrelay.history import recording
from lensrelay.history.models import DocVersion

logger = logging.getLogger(__name__)


@persistence.on_compacted
def _compacted(done: persistence.Compacted) -> None:
    # With a derive process, it reads the compaction from the log and keeps the version there.
    if derived_inline():
        recording.on_compacted(done)


class _Baselines:
    """Per store, inline: the documents given a baseline version here, and those being given one."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.baselined: set[str] = set()
        self.baselining: set[str] = set()

    def edited(self, doc_id: str, *, logged_id: int) -> None:
        if doc_id not in self.baselined and doc_id not in self.baselining:
            self.baselining.add(doc_id)
            # The row this change was logged as: the baseline is what came before it, whatever this
            # process logs meanwhile.
            self.store.spawn(self._baseline(doc_id, logged_id))

    async def _baseline(self, doc_id: str, logged_id: int) -> None:
        try:
            with failures_logged(logger, "recording the first version of %s", doc_id):
                if await self.store.db(recording.version_record_baseline, doc_id=doc_id, before_id=logged_id):
                    self.baselined.add(doc_id)
        finally:
            self.baselining.discard(doc_id)


def _noticed(room: Room) -> None:
    room.store.attached(_Baselines).edited(room.doc_id, logged_id=room.last_logged_id)


async def _went_quiet(store: DocStore, doc_ids: frozenset[str]) -> None:
    with failures_logged(logger, "recording the versions of %d notes", len(doc_ids)):
        await store.db(recording.versions_record_stored, doc_ids=sorted(doc_ids))


def quiet_for(store: DocStore) -> Debounced:
    """Inline: the documents edited here whose burst has not gone quiet yet (`timers`)."""
    return VERSIONS.debouncer(store)


# -- in the derive process ------------------------------------------------------------------------------

# Baselines looked for per pass at most (issue 36). When a team starts typing into many notes each needs
# its first version at once: 150 of them in one pass (a state rebuilt from the log, a text decoded, a
# write transaction each) cost the live path's tail more than everything else the derive process does.
# A pass's baselines are read together and written in one transaction.
# None is urgent while the rows before its burst are in the log; a burst long enough that a compaction
# (`LENSRELAY_COMPACT_AFTER_UPDATES` rows) could soon fold them away is taken beyond the budget.
BASELINES_PER_PASS = 10


@dataclass
class _Burst:
    """A document's log rows not yet in a version, as the follower read them."""

    first_id: int
    last_id: int
    last_at: datetime
    authors: dict[int, str] = field(default_factory=dict)
    # The version before it: "todo", "waiting" (the burst so far only created the document: nothing to
    # keep yet), "done".
    baseline: str = "todo"
    asked_at: int = 0  # the burst's last row when its baseline was last looked for

    def add(self, row_id: int, author: str, created: datetime) -> None:
        self.first_id = min(self.first_id, row_id)
        self.last_id = max(self.last_id, row_id)
        self.last_at = max(self.last_at, created)
        self.authors[row_id] = author


class VersionsFollower:
    """The versions, kept by the derive process from the update log (the view "versions" `feed`)."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.bursts: dict[str, _Burst] = {}
        # Per document, the newest log id a version recorded here includes: rows up to it are kept.
        self.versioned: dict[str, int] = {}
        self.resumed = False

    async def step(self, feed: FeedStep) -> None:
        if not self.resumed:
            # What a stopped derive process had read but not kept yet is in the log still: the rows of
            # each document after its newest version.
            unrecorded = await self.store.db(recording.versions_unrecorded)
            self.versioned.update(unrecorded.newest)
            for found in unrecorded.documents:
                for row_id, author, created in found.rows:
                    self._read(found.doc_id, row_id, author, created)
            self.resumed = True
        versioned = feed.of_kind(*recording.VERSIONED_KINDS)
        for row in feed.rows:
            if row.doc_id in versioned and row.id > self.versioned.get(row.doc_id, 0):
                self._read(row.doc_id, row.id, row.author, row.created)
        await self._baselines()
        # A compaction is a version. The log says which: those that folded rows before they were read
        # (`compacted`), and, for the documents with rows not in a version yet, their snapshot, which
        # a compaction after the rows were read has moved on.
        snapshots = dict((doc_id, upto) for doc_id, upto in feed.compacted if doc_id in versioned)
        if self.bursts:
            snapshots.update(await self.store.db(recording.snapshots_of, doc_ids=sorted(self.bursts)))
        for doc_id, upto in sorted(snapshots.items()):
            if upto > self.versioned.get(doc_id, 0):
                await self._compacted(doc_id, upto)
        await self._quiet()

    def _read(self, doc_id: str, row_id: int, author: str, created: datetime) -> None:
        burst = self.bursts.get(doc_id)
        if burst is None:
            self.bursts[doc_id] = _Burst(row_id, row_id, created, {row_id: author})
        else:
            burst.add(row_id, author, created)

    async def _baselines(self) -> None:
        due = [
            (doc_id, burst)
            for doc_id, burst in self.bursts.items()
            if burst.baseline == "todo" or (burst.baseline == "waiting" and burst.asked_at != burst.last_id)
        ]
        # The nearest to a compaction first; one asked with no row since (it failed) after the others.
        due.sort(key=lambda item: (item[1].asked_at == item[1].last_id, -len(item[1].authors)))
        urgent = int(settings.LENSRELAY_COMPACT_AFTER_UPDATES) // 4
        asked: list[tuple[str, _Burst]] = []
        for index, (doc_id, burst) in enumerate(due):
            if index >= BASELINES_PER_PASS and len(burst.authors) < urgent:
                break  # the next passes take the rest
            asked.append((doc_id, burst))
        if not asked:
            return
        for _, burst in asked:
            burst.asked_at = burst.last_id
        with failures_logged(logger, "recording the versions before the edits of %d notes", len(asked)):
            answers = await self.store.db(
                recording.version_record_burst_baselines,
                first_ids={doc_id: burst.first_id for doc_id, burst in asked},
            )
            for doc_id, burst in asked:
                # None: only the document's creation so far; asked again on the next pass.
                burst.baseline = "waiting" if answers.get(doc_id) is None else "done"

    async def _compacted(self, doc_id: str, upto: int) -> None:
        burst = self.bursts.get(doc_id)
        authors = [] if burst is None else [(i, a) for i, a in burst.authors.items() if i <= upto]
        with failures_logged(logger, "recording the compacted version of %s", doc_id):
            version = await self.store.db(recording.version_record_snapshot, doc_id=doc_id, authors=authors)
            self._kept(doc_id, upto if version is None else version.upto_update_id)

    async def _quiet(self) -> None:
        quiet = timedelta(seconds=float(settings.LENSRELAY_VERSIONS_QUIET_SECONDS))
        now = timezone.now()
        due: list[tuple[str, _Burst]] = []
        for doc_id, burst in list(self.bursts.items()):
            # Not before its baseline was looked for (a failure to is tried again on the next pass).
            if now - burst.last_at < quiet or burst.baseline == "todo":
                continue
            if burst.baseline == "waiting":
                # Only the document's creation (an import, a new note): its text is in the log, and kept
                # as the baseline of its first edits; a version of it would only copy it.
                del self.bursts[doc_id]
                continue
            due.append((doc_id, burst))
        if not due:
            return
        with failures_logged(logger, "recording the versions of %d notes", len(due)):
            kept = await self.store.db(
                recording.versions_record_stored, doc_ids=[doc_id for doc_id, _ in due]
            )
            for doc_id, burst in due:
                version = kept.get(doc_id)
                self._kept(doc_id, burst.last_id if version is None else version.upto_update_id)

    def _kept(self, doc_id: str, upto: int) -> None:
        """Rows up to `upto` are in a version (or were found to need none): the burst ends if it had no
        later row."""
        self.versioned[doc_id] = max(self.versioned.get(doc_id, 0), upto)
        burst = self.bursts.get(doc_id)
        if burst is not None and burst.last_id <= upto:
            del self.bursts[doc_id]


VERSIONS = derived_view(
    "versions",
    feed=VersionsFollower,
    handle=_went_quiet,
    follows=Follows(kinds=frozenset(recording.VERSIONED_KINDS)),
    delay=lambda: float(settings.LENSRELAY_VERSIONS_QUIET_SECONDS),
    quiet=True,
    noticed=_noticed,
)


def _purged(sender: object, *, doc_ids: list[str], **kwargs: object) -> None:
    # A purge leaves no text of a note anywhere: its versions go with its log and snapshots.
    DocVersion.objects.filter(doc_id__in=doc_ids).delete()


documents_purged.connect(_purged, dispatch_uid="lensrelay.history.listen.documents_purged")
