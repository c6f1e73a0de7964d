"""Derived work follows the change feed, off the live path: backlinks, search rows, vectors, versions,
MCP `resources/updated` notifications and the suggestion follower.

The live path (receive, rehearse, persist, broadcast, awareness) only logs each update (`YUpdate`). Views
derived from documents register here:

- `derived_view(name, handle)`: `handle(store, doc_ids)` brings the view in step with those notes (content
  documents) as they are now (backlinks of their links, search rows, vectors), or tells of their change
  (`mcp_tools.notifications.produce`: subscribed MCP sessions, one event per session and note per pass).
- `derived_feed_view(name, factory)`: `factory(store)` makes, per follower, an object whose `step(feed)`
  sees every pass, what it read included (`FeedStep`: the log rows with their authors and times, the
  compactions, the kinds of the documents changed), even a pass that read nothing: version snapshots
  (an edit burst going quiet is the absence of rows), backlinks after folder changes (moves, trash), the
  suggestion follower (`suggestions.lifecycle.follow`: notes left for a later pass are looked at again without
  an edit).

Handlers are idempotent (running one twice over a document changes nothing; a notification told twice
only has its client read again), which is what lets the follower below re-read a window of the log after
a restart instead of keeping exactly-once bookkeeping.

Where they run is `LENSRELAY_DERIVED_WORK`:

- ``"process"`` (the default): a process of its own, `manage.py derive`, follows the update log from a
  durable cursor (`DerivedCursor`), coalesces what it reads per document (a note changed 300 times
  since the last read is handled once) and runs every view on the batch; the server processes run none
  of them, not per update nor after a move: they log, broadcast and compact. `python -m
  lensrelay.server.serve` starts that process beside the server (and again if it ends); scaled out, it
  is a deployment unit of its own. Killed, it resumes from its cursor (and the versions from what the
  database holds): nothing is lost, and the live path never waits for it.
- ``"inline"``: each server process runs the views itself, debounced per document, as before (one process
  with no launcher: the test suite, `manage.py runserver`). `derive_pending(store)` runs the follower once
  in-process, for tests that use a store directly in process mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pycrdt import merge_updates

from lensrelay.docstore import persistence
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache
from lensrelay.models import DerivedCursor, YDoc, YSnapshot, YUpdate

logger = logging.getLogger(__name__)

CURSOR_NAME = "derive"
# Re-read this many log ids below the cursor: ids of concurrent transactions may commit out of order.
WINDOW = 500
# Log rows read per step at most: a long backlog is worked off in bounded steps, the cursor saved after each.
STEP_ROWS = 5000
# Entries of the log that name no document (see lensrelay.docstore.persistence).
MARKERS = frozenset({persistence.FOLDERS_CHANGED, persistence.DOCUMENTS_PURGED})

Handler = Callable[[DocStore, frozenset[str]], Awaitable[None]]


@dataclass(frozen=True)
class DerivedView:
    name: str
    handle: Handler


@dataclass(frozen=True)
class FeedRow:
    """One logged update as the follower reads it (not its data)."""

    id: int
    doc_id: str
    author: str
    created: datetime


@dataclass(frozen=True)
class FeedStep:
    """What one pass of the follower read: the fresh log rows (each given once, in log order, markers
    left out), the snapshots past the cursor (doc_id, upto: rows a compaction folded) and the kind of every
    document either names (a document missing from `kinds` is gone)."""

    rows: list[FeedRow]
    compacted: list[tuple[str, int]]
    kinds: dict[str, str]

    def of_kind(self, *kinds: str) -> set[str]:
        return {doc_id for doc_id, kind in self.kinds.items() if kind in kinds}


class FeedView(Protocol):
    async def step(self, feed: FeedStep) -> None: ...


FeedViewFactory = Callable[[DocStore], FeedView]


@dataclass(frozen=True)
class DerivedFeedView:
    name: str
    factory: FeedViewFactory


_views: list[DerivedView] = []
_feed_views: list[DerivedFeedView] = []


def derived_view(name: str, handle: Handler, *, first: bool = False) -> None:
    """Register a view the follower keeps in step (its module is imported at start-up). Views run in the
    order registered; `first` puts one before the others (a cheap one someone waits for)."""
    if all(view.name != name for view in _views):
        _views.insert(0 if first else len(_views), DerivedView(name, handle))


def derived_feed_view(name: str, factory: FeedViewFactory) -> None:
    """Register a view that sees every pass of the follower (its module is imported at start-up)."""
    if all(view.name != name for view in _feed_views):
        _feed_views.append(DerivedFeedView(name, factory))


def derived_views() -> list[DerivedView]:
    return list(_views)


def derived_feed_views() -> list[DerivedFeedView]:
    return list(_feed_views)


def derived_inline() -> bool:
    """Whether this process runs derived work itself, after each change (else the derive process does)."""
    return str(settings.LENSRELAY_DERIVED_WORK) != "process"


# -- database ------------------------------------------------------------------------------------------


def cursor_load(*, name: str = CURSOR_NAME) -> int | None:
    return DerivedCursor.objects.filter(name=name).values_list("last_update_id", flat=True).first()


def derive_backlog() -> float | None:
    """Rows of the update log the derive process has not read yet (`/metrics`, read when scraped); None
    when each server process derives its own changes (there is no such process to fall behind)."""
    if derived_inline():
        return None
    cursor = cursor_load() or 0
    return float(YUpdate.objects.filter(id__gt=cursor).count())


def cursor_save(*, last_update_id: int, name: str = CURSOR_NAME) -> None:
    with transaction.atomic():
        DerivedCursor.objects.update_or_create(
            name=name, defaults={"last_update_id": last_update_id, "updated": timezone.now()}
        )


@dataclass(frozen=True)
class FeedRead:
    rows: list[FeedRow]  # every writer's
    compacted: list[tuple[str, int]]  # (doc_id, upto) of snapshots past the cursor


def feed_read(*, after_id: int, cursor: int, limit: int = STEP_ROWS) -> FeedRead:
    """The log's rows after `after_id`, and the snapshots covering ids after `cursor` (rows a compaction
    deleted before the follower read them: their documents changed too). Snapshots are read after the
    log, as in `persistence.changes_since`."""
    rows = [
        FeedRow(row_id, doc_id, author, created)
        for row_id, doc_id, author, created in YUpdate.objects.filter(id__gt=after_id)
        .order_by("id")
        .values_list("id", "doc_id", "author", "created")[:limit]
    ]
    compacted = list(
        YSnapshot.objects.filter(upto_update_id__gt=cursor).values_list("doc_id", "upto_update_id")
    )
    return FeedRead(rows=rows, compacted=compacted)


def doc_kinds(doc_ids: Iterable[str]) -> dict[str, str]:
    ids = list(doc_ids)
    found: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        found.update(YDoc.objects.filter(doc_id__in=ids[start : start + 500]).values_list("doc_id", "kind"))
    return found


@dataclass(frozen=True)
class StateBefore:
    """A document's state before one of its log rows, rebuilt from its snapshot and log."""

    state: bytes | None  # None: nothing was logged before it (the row created the document)
    upto_update_id: int  # the last log id the state includes (0: none)
    authors: list[tuple[int, str]]  # (log id, author) of the rows it includes
    created: datetime | None  # when the newest of them was logged


def state_before(*, doc_id: str, before_id: int) -> StateBefore | None:
    """The document as it was before the log row `before_id`, or None when a compaction has folded rows
    from that id on into its snapshot (the state before it is gone from the log).

    What the derive process rebuilds the past from: the baseline version before an edit burst, the folder
    entries a move changed."""
    rows = list(
        YUpdate.objects.filter(doc_id=doc_id, id__lt=before_id)
        .order_by("id")
        .values_list("id", "data", "author", "created")
    )
    snapshot = (
        YSnapshot.objects.filter(doc_id=doc_id).values_list("data", "upto_update_id", "updated").first()
    )
    if snapshot is not None and snapshot[1] >= before_id:
        return None
    updates = ([bytes(snapshot[0])] if snapshot else []) + [bytes(data) for _, data, _, _ in rows]
    authors = [(row_id, author) for row_id, _, author, _ in rows]
    moments = [created for _, _, _, created in rows] + ([snapshot[2]] if snapshot else [])
    if not updates:
        return StateBefore(state=None, upto_update_id=0, authors=[], created=None)
    state = updates[0] if len(updates) == 1 else merge_updates(*updates)
    upto = max([snapshot[1] if snapshot else 0, *(row_id for row_id, _ in authors)])
    return StateBefore(state=state, upto_update_id=upto, authors=authors, created=max(moments))


# -- the follower --------------------------------------------------------------------------------------


class DeriveFollower:
    """Follows the update log from a durable cursor and runs every derived view on what changed."""

    def __init__(self, store: DocStore, *, name: str = CURSOR_NAME) -> None:
        self.store = store
        self.name = name
        self.cursor: int | None = None
        self._handled: set[int] = set()
        # Compactions past the cursor already handled (doc_id: upto): a snapshot folding rows logged
        # after the last row read stays past the cursor until a later row is read, and would otherwise
        # make its document "changed" on every pass until then (a notification each time).
        self._folded: dict[str, int] = {}
        self.steps = 0
        # Each follower its own feed views: a follower started afresh (a restarted derive process)
        # starts them afresh too, from what the database holds.
        self.feed_views: list[tuple[str, FeedView]] = [(v.name, v.factory(store)) for v in _feed_views]

    async def start(self) -> int:
        """Read the cursor. A first start begins at the log's origin: every document ever compacted has
        a snapshot past it, so the first pass brings every view in step with every document."""
        if self.cursor is None:
            cursor = await self.store.db(cursor_load, name=self.name)
            self.cursor = 0 if cursor is None else cursor
            # The rooms this process loads must take in what the server logs; the text cache is told
            # of documents changed elsewhere through the same feed.
            await self.store.start_feed()
        return self.cursor

    async def step(self) -> set[str]:
        """One pass: the documents changed since the last pass, each handled once by every view; the
        cursor is saved only after the views are done, so a kill at any point loses nothing."""
        cursor = await self.start()
        floor = max(0, cursor - WINDOW)
        read = await self.store.db(feed_read, after_id=floor, cursor=cursor)
        fresh = [row for row in read.rows if row.id not in self._handled]
        folded = [(doc_id, upto) for doc_id, upto in read.compacted if self._folded.get(doc_id) != upto]
        changed = {row.doc_id for row in fresh} | {doc_id for doc_id, _ in folded}
        changed -= MARKERS
        named = (changed | {doc_id for doc_id, _ in read.compacted}) - MARKERS
        kinds: dict[str, str] = {}
        if named:
            kinds = await self.store.db(doc_kinds, named)
        content = {doc_id for doc_id in changed if kinds.get(doc_id) == YDoc.Kind.CONTENT}
        folders = {doc_id for doc_id in changed if kinds.get(doc_id) == YDoc.Kind.FOLDER}
        if content or folders:
            # The changed notes are kept loaded here: the feed then applies only their new rows on each
            # pass, where reading a note's text from the database merges its whole stored log again.
            for doc_id in sorted(content | folders):
                await self.store.get(doc_id)
            # Loaded rooms (the notes, the folder documents being written) take in what others logged.
            await self.store.catch_up()
            cache = text_cache(self.store)
            for doc_id in content:
                cache.invalidate(doc_id)
        feed = FeedStep(
            rows=[row for row in fresh if row.doc_id not in MARKERS], compacted=read.compacted, kinds=kinds
        )
        # Every pass, even one that read nothing: a burst of edits going quiet is the absence of rows.
        for name, feed_view in self.feed_views:
            with failures_logged(logger, "derived view %s", name):
                await feed_view.step(feed)
        if content:
            batch = frozenset(content)
            for view in _views:
                with failures_logged(logger, "derived view %s for %d documents", view.name, len(batch)):
                    await view.handle(self.store, batch)
            logger.info("derived views brought in step for %d documents", len(batch))
        newest = max([cursor, *(row.id for row in read.rows)])
        self._handled.update(row.id for row in fresh)
        self._handled = {row_id for row_id in self._handled if row_id > newest - WINDOW}
        self._folded = {doc_id: upto for doc_id, upto in (*self._folded.items(), *folded) if upto > newest}
        if newest != cursor:
            await self.store.db(cursor_save, last_update_id=newest, name=self.name)
            self.cursor = newest
        self.steps += 1
        return content

    async def run(self, *, stop: asyncio.Event | None = None, parent_pid: int | None = None) -> None:
        """Step forever (until `stop` is set, or the launcher that started this process is gone)."""
        stop = stop or asyncio.Event()
        poll = float(settings.LENSRELAY_DERIVE_POLL_SECONDS)
        while not stop.is_set():
            if parent_pid is not None and os.getppid() != parent_pid:
                logger.info("the server that started this derive process is gone: stopping")
                return
            started = time.monotonic()
            with failures_logged(logger, "derived work"):
                await self.step()
            wait = max(0.0, poll - (time.monotonic() - started))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=wait)


def follower_for(store: DocStore) -> DeriveFollower:
    return store.attached(DeriveFollower)


async def derive_pending(store: DocStore) -> set[str]:
    """Run the follower in this process until it has read the whole log (tests of the process mode).
    Returns every content document handled."""
    follower = follower_for(store)
    handled: set[str] = set()
    while True:
        before = follower.cursor
        handled |= await follower.step()
        if follower.cursor == before:
            return handled
