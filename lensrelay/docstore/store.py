"""The per-process registry of live rooms: lazy loading, durable logging, catch-up and idle unloading."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import connection, connections
from pycrdt import merge_updates

from lensrelay.docstore import persistence
from lensrelay.docstore.logwriter import LogWriter, LoopAppender
from lensrelay.docstore.loopread import LoopReader
from lensrelay.docstore.modified import ModifiedTimes
from lensrelay.docstore.panics import failures_logged, is_panic
from lensrelay.docstore.peers import PeerBus
from lensrelay.docstore.room import FOREIGN, Room
from lensrelay.observability import metrics

logger = logging.getLogger(__name__)

T = TypeVar("T")

ChangeListener = Callable[[Room, Sequence[bytes]], None]
LoadListener = Callable[[Room], None]
ForeignListener = Callable[["DocStore", str], None]

# Apps built on the store (folder mirroring, search, link index) register here at import time.
_change_listeners: list[ChangeListener] = []
_load_listeners: list[LoadListener] = []
_foreign_listeners: list[ForeignListener] = []


def on_change(listener: ChangeListener) -> ChangeListener:
    _change_listeners.append(listener)
    return listener


def on_load(listener: LoadListener) -> LoadListener:
    _load_listeners.append(listener)
    return listener


def on_foreign(listener: ForeignListener) -> ForeignListener:
    """Called for documents that another process changed and this one has not loaded."""
    _foreign_listeners.append(listener)
    return listener


def keep_connection_healthy() -> None:
    """Keep this thread's one connection open across calls; replace it only after it has failed.

    close_old_connections() with CONN_MAX_AGE=0 closes it on every call, and closing the last connection
    to a WAL database checkpoints it: a reconnect plus a checkpoint per logged update.
    """
    if connection.connection is not None and connection.errors_occurred:
        if connection.is_usable():
            connection.errors_occurred = False
        else:
            connection.close()


def _apply_rows(room: Room, rows: list[tuple[int, bytes]]) -> int:
    """Apply logged rows to a room as one update (one rehearsal, transaction and flush for a document's
    rows of a poll: the derive process catches up several a note at each pass at a team's load); rows that do
    not merge go one by one, and one that does not decode is logged and left. Returns the rows applied."""
    if len(rows) > 1:
        try:
            merged = merge_updates(*(data for _, data in rows))
            room.apply_update(merged, FOREIGN)
            return len(rows)
        except ValueError:
            pass  # one of them is broken: found below
        except BaseException as exc:
            if not is_panic(exc):
                raise
    applied = 0
    for row_id, data in rows:
        try:
            room.apply_update(data, FOREIGN)
            applied += 1
        except ValueError:
            logger.error("logged update %s of %s does not decode", row_id, room.doc_id)
    return applied


class DocStore:
    """Owns every live Doc of this process. All methods run on the event loop that created it."""

    # Re-read this many log ids behind the cursor: ids of concurrent transactions may commit out of order.
    CATCH_UP_WINDOW = 500

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.writer = uuid.uuid4().hex
        self.rooms: dict[str, Room] = {}
        self._loading: dict[str, asyncio.Future[Room | None]] = {}
        # One thread for the database work of the store and its companions, in order...
        self._db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lensrelay-db")
        # ...and one for the update log alone, so no append waits behind a slow read.
        self.log = LogWriter(
            loop,
            writer=self.writer,
            prepare=keep_connection_healthy,
            on_loop=LoopAppender.for_default_database(),
        )
        # SQLite: a room's stored state is read on the loop (docstore.loopread), not in two trips.
        self._loop_reader = LoopReader.for_default_database(window=self.CATCH_UP_WINDOW)
        self._compacting: set[str] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self._cursor: int | None = None
        self._caught_up: set[int] = set()
        self._snapshots_seen: dict[str, int] = {}
        self._maintenance: asyncio.Task[None] | None = None
        self._attached: dict[Callable[..., Any], Any] = {}
        self._closed = False
        self.idle_seconds = settings.LENSRELAY_IDLE_UNLOAD_SECONDS
        self.poll_seconds = settings.LENSRELAY_POLL_SECONDS
        # Whether each poll catches up with the log; the derive process's follower does at each pass.
        self.catch_up_on_poll = True
        self.compact_after = settings.LENSRELAY_COMPACT_AFTER_UPDATES
        self.batch_seconds = settings.LENSRELAY_BATCH_MS / 1000
        self.repair_seconds = settings.LENSRELAY_REPAIR_SECONDS
        self._repaired_at = 0.0
        # Only worth it with several processes: the in-memory layer has no one else to reach.
        self.peers: PeerBus | None = PeerBus(self) if settings.REDIS_URL else None

    def attached(self, factory: Callable[[DocStore], T]) -> T:
        """This store's companion built by `factory` (text cache, path index, …), created on first use."""
        companion = self._attached.get(factory)
        if companion is None:
            companion = self._attached[factory] = factory(self)
        return companion  # type: ignore[no-any-return]

    # -- database --------------------------------------------------------------------------------------

    async def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def call() -> T:
            keep_connection_healthy()
            return fn(*args, **kwargs)

        # In the caller's context: database work done on someone's behalf still knows who (docstore.acting).
        return await self.loop.run_in_executor(self._db, contextvars.copy_context().run, call)

    async def persist(self, room: Room, update: bytes, *, author: str = "") -> int:
        """Log an update durably before anyone else sees it; retries until the database takes it."""
        delay = 0.05
        while True:
            try:
                row_id = await self.log.append(room.doc_id, update, author=author)
            except Exception:
                logger.exception("could not log an update of %s; retrying in %.2fs", room.doc_id, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            if room.kind == "content":
                self.attached(ModifiedTimes).changed(room.doc_id)
            if self.peers is not None:
                self.peers.publish(room.doc_id, update, row_id)
            return row_id

    # -- rooms -----------------------------------------------------------------------------------------

    async def get(self, doc_id: str) -> Room | None:
        """The live room of a known document, loading it on first use; None for unknown ids."""
        room = self.rooms.get(doc_id)
        if room is not None:
            room.last_used = time.monotonic()
            return room
        pending = self._loading.get(doc_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Room | None] = self.loop.create_future()
        self._loading[doc_id] = future
        try:
            room = await self._load(doc_id)
            future.set_result(room)
            return room
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: concurrent waiters re-raise it themselves
            raise
        finally:
            del self._loading[doc_id]

    async def _load(self, doc_id: str) -> Room | None:
        # The log's origin is read only while nothing follows the log yet (the first room): ~500 ids.
        following = self._cursor is not None
        loaded = (
            self._loop_reader.room(doc_id, origin=not following) if self._loop_reader is not None else None
        )
        if loaded is not None:
            # Read on the loop in one snapshot (SQLite): the cursor no later than the state it goes with.
            if loaded.kind is None or loaded.state is None:
                return None
            if self._cursor is None:
                assert loaded.origin is not None  # nothing awaited since `following` was read
                self._follow_from(loaded.origin)
            await self.start_feed()
            kind, state = loaded.kind, loaded.state
        else:
            found = await self.db(persistence.doc_kind, doc_id)
            if found is None:
                return None
            await self.start_feed()
            kind, state = found, await self.db(persistence.load_state, doc_id)
        room = Room(store=self, doc_id=doc_id, kind=kind)
        room.load(state.update, log_rows=state.log_rows)
        self._snapshots_seen[doc_id] = max(self._snapshots_seen.get(doc_id, 0), state.last_update_id)
        self.rooms[doc_id] = room
        metrics.room_loaded(kind)
        if self.peers is not None:
            await self.peers.start()  # never raises: without Redis the log still carries changes
            self.peers.loaded(room)
        for listener in _load_listeners:
            listener(room)
        return room

    def warm_loop_reads(self, doc_id: str) -> None:
        """Run the loop's own reads once for `doc_id`, an id nobody has (lensrelay.server.warmup): a fresh
        server's first room load would otherwise also open the connection and read the file's schema."""
        if self._loop_reader is not None:
            self._loop_reader.room(doc_id)

    async def create(self, doc_id: str, kind: str) -> Room:
        """Register a document id (idempotent) and return its room."""
        await self.db(persistence.create_ydoc, doc_id, kind)
        room = await self.get(doc_id)
        assert room is not None
        return room

    async def evict(self, doc_id: str) -> Room | None:
        """Drop a purged document's room for good: it logs and sends nothing more, and a later `get`
        finds no stored document. Close its sockets first. Returns the room, once it has finished the
        batch it was logging (so nothing of it is written after this returns)."""
        room = self.rooms.pop(doc_id, None)
        if room is None:
            return None
        metrics.rooms_unloaded(room.kind)
        room.retire()
        self._compacting.discard(doc_id)
        await room.flushed()
        return room

    def notify_changed(self, room: Room, updates: Sequence[bytes]) -> None:
        for listener in _change_listeners:
            with failures_logged(logger, "change listener %r for %s", listener, room.doc_id):
                listener(room, updates)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run background work, keeping a reference so it is not garbage collected mid-flight.

        A task that fails is logged at once (never "Task exception was never retrieved" at exit).
        """
        task = self.loop.create_task(coro)
        self._background.add(task)
        task.add_done_callback(_log_failure)
        task.add_done_callback(self._background.discard)
        return task

    # -- compaction ------------------------------------------------------------------------------------

    def maybe_compact(self, room: Room) -> None:
        if room.log_rows >= self.compact_after and room.doc_id not in self._compacting:
            self.spawn(self.compact(room))

    async def compact(self, room: Room) -> None:
        self._compacting.add(room.doc_id)
        try:
            folded = await self.db(persistence.compact, room.doc_id)
            room.log_rows = max(0, room.log_rows - folded)
        except Exception:
            logger.exception("compaction of %s failed; the log still holds every update", room.doc_id)
        finally:
            self._compacting.discard(room.doc_id)

    # -- catch-up and unloading --------------------------------------------------------------------------

    async def start_feed(self) -> None:
        """Follow what other processes log from now on (idempotent; loading a document starts it too)."""
        if self._cursor is None:
            # Anything logged elsewhere from now on is caught up.
            origin = await self.db(persistence.feed_origin, window=self.CATCH_UP_WINDOW)
            if self._cursor is None:
                self._follow_from(origin)
        if self._maintenance is None or self._maintenance.done():
            self._maintenance = self.loop.create_task(self._maintain())

    def _follow_from(self, origin: persistence.FeedOrigin) -> None:
        # The window below the cursor is re-read for late commits; the rows already committed when this
        # process started following are in whatever it reads from now on, so they are not news (before,
        # a fresh server's first poll reported 500 documents as changed elsewhere and reindexed them).
        self._cursor = origin.last_update_id
        self._caught_up.update(origin.committed)

    async def _maintain(self) -> None:
        while True:
            await asyncio.sleep(self.poll_seconds)
            with failures_logged(logger, "document store maintenance"):
                if self.catch_up_on_poll:
                    await self.catch_up()
                await self.unload_idle()
            if self.peers is not None:
                with failures_logged(logger, "peer repair"):
                    await self._repair_peers()

    async def _repair_peers(self) -> None:
        assert self.peers is not None
        await self.peers.renew()
        now = time.monotonic()
        if now - self._repaired_at >= self.repair_seconds:
            self._repaired_at = now
            rooms = list(self.rooms.values())
            await self.peers.announce(rooms, with_versions=[room for room in rooms if room.clients])

    async def catch_up(self) -> int:
        """Apply updates other processes logged for documents loaded here; returns how many applied.

        A document compacted past rows this process never read (it lagged, or the rows' ids were
        skipped by the window) is reloaded from the database and merged: a CRDT merge by state is
        idempotent, so what the room already had is ignored and what it missed is added.
        """
        if self._cursor is None:
            return 0
        floor = max(0, self._cursor - self.CATCH_UP_WINDOW)
        self._caught_up = {i for i in self._caught_up if i > floor}
        changes = await self.db(
            persistence.changes_since,
            after_id=floor,
            writer=self.writer,
            loaded=frozenset(self.rooms),
            handled=frozenset(self._caught_up),
        )
        applied = 0
        fresh: dict[str, list[tuple[int, bytes]]] = {}
        for row_id, doc_id, data in changes.rows:
            self._cursor = max(self._cursor, row_id)
            # The window is re-read on every poll (late commits); each row is handled once.
            if row_id in self._caught_up:
                continue
            if doc_id not in self.rooms:
                self._caught_up.add(row_id)
                self._notify_foreign(doc_id)
                continue
            if not data:
                continue  # loaded while the log was read, or compacted meanwhile: the next poll has it
            self._caught_up.add(row_id)
            fresh.setdefault(doc_id, []).append((row_id, data))
        for doc_id, rows in fresh.items():
            applied += _apply_rows(self.rooms[doc_id], rows)
        for doc_id, upto in changes.snapshots:
            if upto <= self._snapshots_seen.get(doc_id, 0):
                continue
            if doc_id in self.rooms:
                applied += await self.reload(doc_id)  # if this fails, the next poll tries again
            else:
                self._notify_foreign(doc_id)
            self._snapshots_seen[doc_id] = upto
        return applied

    def applied_from_peer(self, row_id: int) -> None:
        """A logged row that arrived over the channel layer: the poll need not fetch or apply it again."""
        if self._cursor is not None and row_id > self._cursor - self.CATCH_UP_WINDOW:
            self._caught_up.add(row_id)

    async def reload(self, doc_id: str) -> int:
        """Merge the document's stored state into its room (repair after a gap); 1 if anything changed."""
        room = self.rooms.get(doc_id)
        if room is None:
            return 0
        state = await self.db(persistence.load_state, doc_id)
        if state.update is None or self.rooms.get(doc_id) is not room:
            return 0
        before = room.doc.get_state()
        try:
            room.apply_update(state.update, FOREIGN)
        except ValueError:
            logger.error("the stored state of %s does not decode", doc_id)
            return 0
        return int(room.doc.get_state() != before)

    def notify_foreign(self, doc_id: str) -> None:
        """Tell the listeners a document changed outside this process (as the catch-up does)."""
        self._notify_foreign(doc_id)

    def _notify_foreign(self, doc_id: str) -> None:
        for listener in _foreign_listeners:
            with failures_logged(logger, "foreign-change listener %r for %s", listener, doc_id):
                listener(self, doc_id)

    async def unload_idle(self) -> None:
        now = time.monotonic()
        for doc_id, room in list(self.rooms.items()):
            # Folder documents stay: they are small and name every document (paths, links).
            if (
                room.kind == "folder"
                or room.clients
                or room.dirty
                or now - room.last_used < self.idle_seconds
            ):
                continue
            del self.rooms[doc_id]
            metrics.rooms_unloaded(room.kind)
            room.close()
            if room.log_rows:
                await self.compact(room)

    async def close(self) -> None:
        """Flush everything (used at shutdown and by tests)."""
        for room in list(self.rooms.values()):
            await room.flushed()
        await self.attached(ModifiedTimes).flush()
        # The rooms stay readable, but no longer count as held live (a closed store serves nobody).
        if not self._closed:
            self._closed = True
            for room in self.rooms.values():
                metrics.rooms_unloaded(room.kind)
        if self._maintenance is not None:
            self._maintenance.cancel()
        for task in list(self._background):
            task.cancel()
        # The database threads' connections would otherwise outlive the store (and block test teardown).
        if self._loop_reader is not None:
            self._loop_reader.close()
        await self.loop.run_in_executor(None, self.log.close)
        await self.db(connections.close_all)
        self._db.shutdown(wait=True)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        logger.error("background task %s failed", task.get_name(), exc_info=exc)


_stores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DocStore] = weakref.WeakKeyDictionary()
# Stores that a session created (no server loop had one) and how many sessions are using each.
_session_stores: weakref.WeakKeyDictionary[DocStore, int] = weakref.WeakKeyDictionary()


@asynccontextmanager
async def store_session() -> AsyncIterator[DocStore]:
    """The running loop's store; one created just for sessions is closed when the last of them ends.

    Concurrent sessions on one loop (admin requests hopping onto the server's loop together) share the
    store, and it stays open while any socket uses one of its rooms.
    """
    loop = asyncio.get_running_loop()
    if loop not in _stores:
        _session_stores[get_store()] = 0
    store = _stores[loop]
    if store in _session_stores:
        _session_stores[store] += 1
    try:
        yield store
    finally:
        if store in _session_stores:
            _session_stores[store] -= 1
            in_use = _session_stores[store] > 0 or any(room.clients for room in store.rooms.values())
            if not in_use:
                del _session_stores[store]
                # Unregister before closing: a session starting meanwhile gets a fresh store.
                if _stores.get(loop) is store:
                    del _stores[loop]
                await store.close()


def run_on_store(work: Callable[[DocStore], Awaitable[T]]) -> T:
    """Run store work from synchronous code (the admin): on the server's event loop when called from a
    request thread, so the live rooms, their clients and the other workers see the change."""

    async def run() -> T:
        async with store_session() as store:
            return await work(store)

    return async_to_sync(run)()


def get_store() -> DocStore:
    """The store of the running event loop (one per server process; tests get one per loop)."""
    loop = asyncio.get_running_loop()
    store = _stores.get(loop)
    if store is None:
        store = DocStore(loop)
        _stores[loop] = store
    return store
