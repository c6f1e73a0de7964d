"""Derived work follows the change feed, off the live path: backlinks, search rows, vectors, versions,
MCP `resources/updated` notifications and the suggestion follower.

The live path (receive, rehearse, persist, broadcast, awareness) only logs each update (`YUpdate`). Every
view derived from documents is registered here once, with `derived_view(name, ...)`: what handles it, what
it follows, how long its changes are gathered. Modules of lensrelay register theirs when imported at
start-up; the apps built on it (suggestions, mcp_tools) from their AppConfig.ready(). Each registration is
installed for both ways of running derived work:

- `handle(store, doc_ids)` brings the view in step with those notes (content documents) as they are now
  (backlinks of their links, search rows, vectors), or tells of their change (MCP notifications).
- `feed(store)` makes, per follower, an object whose `step(feed)` sees every pass of the derive process,
  what it read included (`FeedStep`: the log rows with their authors and times, the compactions, the kinds
  of the documents changed), even a pass that read nothing: version snapshots (an edit burst going quiet
  is the absence of rows), backlinks after folder changes (moves, trash), the suggestion follower (notes
  left for a later pass are looked at again without an edit). With a derive process it takes the place of
  `handle`, which then serves the inline mode only.
- `follows` (`Follows`) says which changes schedule `handle` inline, `delay` how long they are gathered
  (`Debounced`: one per view and store), `noticed` what must be read at the very change.
- `owed(store)` does at once what a handler kept for later passes (the search rows of a note typed into
  without pause, rewritten every few seconds): a stopping derive process and `derive_pending` call it.

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
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Protocol

from django.conf import settings
from django.db import connection
from django.utils import timezone
from pycrdt import merge_updates

from lensrelay.docstore import persistence
from lensrelay.docstore.inlists import rows_in
from lensrelay.docstore.later import Debounced
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.room import Room
from lensrelay.docstore.spare_cpu import next_pass_in
from lensrelay.docstore.store import DocStore, on_change, on_foreign
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
CONTENT: frozenset[str] = frozenset({YDoc.Kind.CONTENT})


def _always() -> bool:
    return True


def _at_once() -> float:
    return 0.0


@dataclass(frozen=True)
class Follows:
    """Which changes schedule a view inline: those of documents of `kinds` made in this process (by its
    clients, tools and services); with `elsewhere`, also those it applies from other processes, and
    documents they changed that this one has not loaded (for views each process keeps in step itself);
    none while `when()` is false (a view switched off)."""

    kinds: frozenset[str] = CONTENT
    elsewhere: bool = False
    when: Callable[[], bool] = _always


EDITS = Follows()


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


@dataclass(frozen=True, eq=False)
class DerivedView:
    """One view derived from documents, as registered (`derived_view`)."""

    name: str
    handle: Handler | None = None
    follows: Follows = EDITS
    delay: Callable[[], float] = _at_once
    quiet: bool = False  # inline: a document waits until it has not changed for `delay()`
    noticed: Callable[[Room], None] | None = None
    feed: FeedViewFactory | None = None
    first: bool = False
    owed: Callable[[DocStore], Awaitable[None]] | None = None

    def debouncer(self, store: DocStore) -> Debounced:
        """Where this store gathers the view's changes inline (tests wait on it; a service that knows what
        a change concerns adds to it)."""
        return store.attached(self._debounced)

    def _debounced(self, store: DocStore) -> Debounced:
        handle = self.handle
        assert handle is not None, f"derived view {self.name} has no handler to run inline"
        name = f"derived view {self.name}"
        return Debounced(store, partial(handle, store), delay=self.delay, quiet=self.quiet, name=name)


@dataclass(frozen=True)
class DerivedFeedView:
    name: str
    factory: FeedViewFactory


# The registry, by name in the order registered, and its installs: with a derive process, the follower's
# views of each pass's changed notes and of every pass; inline, the views this process's changes schedule.
_registry: dict[str, DerivedView] = {}
_views: list[DerivedView] = []
_feed_views: list[DerivedFeedView] = []
_inline: list[DerivedView] = []


def derived_view(
    name: str,
    *,
    handle: Handler | None = None,
    feed: FeedViewFactory | None = None,
    follows: Follows = EDITS,
    delay: Callable[[], float] = _at_once,
    quiet: bool = False,
    noticed: Callable[[Room], None] | None = None,
    first: bool = False,
    owed: Callable[[DocStore], Awaitable[None]] | None = None,
) -> DerivedView:
    """Register a derived view once (see the module's docstring) and install it for both modes. Views run in
    the order registered; `first` puts one before the others in each pass (a cheap one someone waits for).
    `delay` is read each time (a setting, or a module constant tests patch). `owed` does now what a
    handler keeps for later passes (search rows of a note typed into without pause): a stopping derive
    process and `derive_pending` call it."""
    if name in _registry:
        return _registry[name]
    view = DerivedView(name, handle, follows, delay, quiet, noticed, feed, first, owed)
    _registry[name] = view
    if feed is not None:
        _feed_views.append(DerivedFeedView(name, feed))
    elif handle is not None:
        _views.insert(0 if first else len(_views), view)
    if handle is not None:
        _inline.append(view)
    return view


def derived_views() -> list[DerivedView]:
    return list(_registry.values())


def derived_debouncer(store: DocStore, name: str) -> Debounced:
    """The inline debouncer of the view registered as `name` (see `DerivedView.debouncer`)."""
    return _registry[name].debouncer(store)


def derived_inline() -> bool:
    """Whether this process runs derived work itself, after each change (else the derive process does)."""
    return str(settings.LENSRELAY_DERIVED_WORK) != "process"


# -- inline: this process's changes, gathered per view -----------------------------------------------------


@on_change
def _changed(room: Room, updates: Sequence[bytes]) -> None:
    # With a derive process the server does no derived work, not even scheduling it: one check per change.
    if not _inline or not derived_inline():
        return
    for view in _inline:
        follows = view.follows
        if room.kind in follows.kinds and (room.changed_here or follows.elsewhere) and follows.when():
            with failures_logged(logger, "scheduling derived view %s for %s", view.name, room.doc_id):
                if view.noticed is not None:
                    view.noticed(room)
                view.debouncer(room.store).add(room.doc_id)


@on_foreign
def _changed_elsewhere(store: DocStore, doc_id: str) -> None:
    if not _inline or not derived_inline():
        return
    for view in _inline:
        if view.follows.elsewhere and view.follows.when():
            view.debouncer(store).add(doc_id)


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
    # One UPDATE on every pass but a cursor's first: `update_or_create` read the row first in a transaction
    # of its own (SELECT, UPDATE of every column, and a savepoint inside a caller's transaction).
    # A plain UPDATE: the ORM's cost ten times the database's for this one row (issue 36).
    now = timezone.now()
    table = connection.ops.quote_name(DerivedCursor._meta.db_table)
    with connection.cursor() as db:
        db.execute(
            f"UPDATE {table} SET last_update_id = %s, updated = %s WHERE name = %s",
            [last_update_id, connection.ops.adapt_datetimefield_value(now), name],
        )
        if db.rowcount:
            return
    DerivedCursor.objects.update_or_create(
        name=name, defaults={"last_update_id": last_update_id, "updated": now}
    )


@dataclass(frozen=True)
class FeedRead:
    rows: list[FeedRow]  # every writer's, but those `handled` already
    newest: int  # the highest log id read (0: none), handled or not
    compacted: list[tuple[str, int]]  # (doc_id, upto) of snapshots past the cursor


def feed_read(
    *, after_id: int, cursor: int, handled: frozenset[int] = frozenset(), limit: int = STEP_ROWS
) -> FeedRead:
    """The log's rows after `after_id` but those `handled`, and the snapshots covering ids after `cursor`
    (rows a compaction deleted before the follower read them: their documents changed too). Snapshots
    are read after the log, as in `persistence.changes_since`.

    Ids first: the window below the cursor is read again on every pass for late commits, and at a team's
    load turning its handled rows' times into datetimes was a fifth of a profile of the derive process."""
    log = connection.ops.quote_name(YUpdate._meta.db_table)
    fields = "id, doc_id, author, created"
    # Plain statements, as `persistence.changes_since`: the ORM's building and reading took more CPU
    # than the database's answer, on every pass.
    with connection.cursor() as db:
        db.execute(f"SELECT id FROM {log} WHERE id > %s ORDER BY id LIMIT %s", [after_id, limit])
        ids = [row_id for (row_id,) in db.fetchall()]
        newest = ids[-1] if ids else 0
        db.execute(f"SELECT {fields} FROM {log} WHERE id > %s AND id <= %s", [cursor, newest])
        found = db.fetchall()
    late = [row_id for row_id in ids if row_id <= cursor and row_id not in handled]
    found += rows_in(f"SELECT {fields} FROM {log} WHERE id IN ({{ids}})", late)
    # A row compacted away between the queries is in the snapshot read below.
    compacted = persistence.snapshots_past(cursor)
    created = persistence.stored_time(YUpdate, "created")
    rows = sorted(
        (FeedRow(row_id, doc_id, author, created(at)) for row_id, doc_id, author, at in found),
        key=lambda row: row.id,
    )
    return FeedRead(rows=rows, newest=newest, compacted=compacted)


def doc_kinds(doc_ids: Iterable[str]) -> dict[str, str]:
    table = connection.ops.quote_name(YDoc._meta.db_table)
    return dict(rows_in(f"SELECT doc_id, kind FROM {table} WHERE doc_id IN ({{ids}})", list(doc_ids)))


@dataclass(frozen=True)
class StateBefore:
    """A document's state before one of its log rows, rebuilt from its snapshot and log."""

    state: bytes | None  # None: nothing was logged before it (the row created the document)
    upto_update_id: int  # the last log id the state includes (0: none)
    authors: list[tuple[int, str]]  # (log id, author) of the rows it includes
    created: datetime | None  # when the newest of them was logged

    @classmethod
    def made_of(
        cls, snapshot: tuple[bytes, int, datetime] | None, rows: Sequence[tuple[int, bytes, str, datetime]]
    ) -> StateBefore:
        """The state of a snapshot (data, upto, updated) and the log rows (id, data, author, created)
        after it, in log order."""
        updates = ([snapshot[0]] if snapshot else []) + [data for _, data, _, _ in rows]
        if not updates:
            return cls(state=None, upto_update_id=0, authors=[], created=None)
        return cls(
            state=updates[0] if len(updates) == 1 else merge_updates(*updates),
            upto_update_id=max([snapshot[1] if snapshot else 0, *(row_id for row_id, _, _, _ in rows)]),
            authors=[(row_id, author) for row_id, _, author, _ in rows],
            created=max([created for _, _, _, created in rows] + ([snapshot[2]] if snapshot else [])),
        )


def state_before(*, doc_id: str, before_id: int) -> StateBefore | None:
    """The document as it was before the log row `before_id`, or None when a compaction has folded rows
    from that id on into its snapshot (the state before it is gone from the log).

    What the derive process rebuilds the past from: the baseline version before an edit burst, the folder
    entries a move changed."""
    rows = [
        (row_id, bytes(data), author, created)
        for row_id, data, author, created in YUpdate.objects.filter(doc_id=doc_id, id__lt=before_id)
        .order_by("id")
        .values_list("id", "data", "author", "created")
    ]
    snapshot = (
        YSnapshot.objects.filter(doc_id=doc_id).values_list("data", "upto_update_id", "updated").first()
    )
    if snapshot is not None and snapshot[1] >= before_id:
        return None
    return StateBefore.made_of(None if snapshot is None else (bytes(snapshot[0]), *snapshot[1:]), rows)


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
        # Told each pass how many seconds old the oldest row it had not read is (0: none); the derive
        # process's scheduling follows it (lensrelay.docstore.spare_cpu).
        self.behind: Callable[[float], None] = lambda seconds: None
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
        read = await self.store.db(feed_read, after_id=floor, cursor=cursor, handled=frozenset(self._handled))
        fresh = read.rows
        oldest = min((row.created for row in fresh), default=None)
        self.behind(0.0 if oldest is None else max(0.0, (timezone.now() - oldest).total_seconds()))
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
                if view.handle is None:
                    continue  # (only views with a handler are installed here)
                with failures_logged(logger, "derived view %s for %d documents", view.name, len(batch)):
                    await view.handle(self.store, batch)
            logger.info("derived views brought in step for %d documents", len(batch))
        newest = max(cursor, read.newest)
        self._handled.update(row.id for row in fresh)
        self._handled = {row_id for row_id in self._handled if row_id > newest - WINDOW}
        self._folded = {doc_id: upto for doc_id, upto in (*self._folded.items(), *folded) if upto > newest}
        if newest != cursor:
            await self.store.db(cursor_save, last_update_id=newest, name=self.name)
            self.cursor = newest
        self.steps += 1
        return content

    async def do_owed(self) -> None:
        """Do now what the views keep for later passes (before this process stops)."""
        for view in _views:
            if view.owed is not None:
                with failures_logged(logger, "derived view %s, its work kept for later", view.name):
                    await view.owed(self.store)

    async def run(self, *, stop: asyncio.Event | None = None, parent_pid: int | None = None) -> None:
        """Step forever (until `stop` is set, or the launcher that started this process is gone)."""
        stop = stop or asyncio.Event()
        poll = float(settings.LENSRELAY_DERIVE_POLL_SECONDS)
        stretch = max(poll, float(settings.LENSRELAY_DERIVE_STRETCH_SECONDS))
        while not stop.is_set():
            if parent_pid is not None and os.getppid() != parent_pid:
                logger.info("the server that started this derive process is gone: stopping")
                return
            started = time.monotonic()
            with failures_logged(logger, "derived work"):
                await self.step()
            wait = next_pass_in(took=time.monotonic() - started, poll=poll, stretch=stretch)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=wait)


def follower_for(store: DocStore) -> DeriveFollower:
    return store.attached(DeriveFollower)


async def derive_pending(store: DocStore) -> set[str]:
    """Run the follower in this process until it has read the whole log and done what its views kept for
    later (`manage.py derive --once`, tests of the process mode). Returns every content document handled."""
    follower = follower_for(store)
    handled: set[str] = set()
    while True:
        before = follower.cursor
        handled |= await follower.step()
        if follower.cursor == before:
            await follower.do_owed()
            return handled
