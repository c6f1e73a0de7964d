"""When versions are recorded: after every compaction, and once an edit burst has been quiet a while.

Only the process where an edit happened schedules its quiet version (other workers apply it from the
log and stay out); the database decides between processes that recorded the same text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from django.conf import settings

from lensrelay.docstore import persistence
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, on_change
from lensrelay.docstore.tombstones import documents_purged
from lensrelay.history import recording
from lensrelay.history.models import DocVersion

logger = logging.getLogger(__name__)

persistence.on_compacted(recording.on_compacted)


class _Quiet:
    """Per store: a timer per document re-armed by each local edit, and the documents given a baseline."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.baselined: set[str] = set()
        self.baselining: set[str] = set()

    def edited(self, doc_id: str, *, logged_id: int) -> None:
        if doc_id not in self.baselined and doc_id not in self.baselining:
            self.baselining.add(doc_id)
            # The row this change was logged as: the baseline is what came before it, whatever this
            # process logs meanwhile.
            self.store.spawn(self._baseline(doc_id, logged_id))
        timer = self.timers.pop(doc_id, None)
        if timer is not None:
            timer.cancel()
        self.timers[doc_id] = self.store.loop.call_later(
            settings.LENSRELAY_VERSIONS_QUIET_SECONDS, self._went_quiet, doc_id
        )

    def _went_quiet(self, doc_id: str) -> None:
        self.timers.pop(doc_id, None)
        self.store.spawn(self._record(recording.version_record_stored, doc_id))

    async def _baseline(self, doc_id: str, logged_id: int) -> None:
        try:
            with failures_logged(logger, "recording the first version of %s", doc_id):
                if await self.store.db(recording.version_record_baseline, doc_id=doc_id, before_id=logged_id):
                    self.baselined.add(doc_id)
        finally:
            self.baselining.discard(doc_id)

    async def _record(self, fn: Callable[..., DocVersion | None], doc_id: str) -> None:
        with failures_logged(logger, "recording a version of %s", doc_id):
            await self.store.db(fn, doc_id=doc_id)


def quiet_for(store: DocStore) -> _Quiet:
    return store.attached(_Quiet)


@on_change
def _edited(room: Room, updates: Sequence[bytes]) -> None:
    if room.kind in recording.VERSIONED_KINDS and room.changed_here:
        quiet_for(room.store).edited(room.doc_id, logged_id=room.last_logged_id)


def _purged(sender: object, *, doc_ids: list[str], **kwargs: object) -> None:
    # A purge leaves no text of a note anywhere: its versions go with its log and snapshots.
    DocVersion.objects.filter(doc_id__in=doc_ids).delete()


documents_purged.connect(_purged, dispatch_uid="lensrelay.history.listen.documents_purged")
