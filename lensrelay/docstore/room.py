"""One live document: its pycrdt Doc, the connected clients, and the persist-then-broadcast pipeline."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, Protocol, TypeVar

# pycrdt's Doc makes an anyio lock, and anyio imports its asyncio backend on first use: a module of
# thousands of lines, compiled when no bytecode is cached. Imported here, at start-up, the first client
# of a freshly started server does not wait for it.
import anyio._backends._asyncio  # noqa: F401
from pycrdt import Doc, Subscription, TransactionEvent, merge_updates

from lensrelay.docstore.acting import current_actor, current_label
from lensrelay.docstore.frontmattermap import FrontmatterFollower
from lensrelay.docstore.rehearsal import Rehearsal, UpdateRefused, apply_or_refuse
from lensrelay.docstore.writers import WriterDocs, deletion_set, writer_for
from lensrelay.observability import metrics
from lensrelay.protocol import wire
from lensrelay.protocol.awareness import AwarenessStates

logger = logging.getLogger(__name__)

EMPTY_UPDATE = b"\x00\x00"
# Renewals of unchanged awareness states are passed on together, once per this many seconds per room.
# Peers drop a state not renewed for 30 s and clients renew every 15 s, so a second late costs nothing;
# clients that connected together (a server restart, a team's morning) renew together, and one message
# per room instead of one per client keeps that wave off every delivery.
AWARENESS_RENEWAL_SECONDS = 1.0


class Peer(Protocol):
    """A connected client of a room (the sync consumer)."""

    async def send_frame(self, frame: bytes) -> None: ...


class Origin:
    """Where a change came from; decides whether it is persisted and to whom it is sent."""

    def __init__(self, name: str, *, persist: bool = True, author: str = "") -> None:
        self.name = name
        self.persist = persist
        self.author = author  # who the change is attributed to in version history

    def __repr__(self) -> str:
        return f"Origin({self.name})"


SERVER = Origin("server")
# Already in the database (logged by another process): broadcast, never log twice.
FOREIGN = Origin("foreign", persist=False)

PersistFn = Callable[[str, bytes], Awaitable[int]]

T = TypeVar("T")


class AwarenessPublisher(Protocol):
    """Sends a room's awareness to the other processes (the store's peer bus)."""

    def publish_awareness(self, doc_id: str, update: bytes) -> None: ...


class RoomHost(Protocol):
    """What a room asks of the store that holds it (`lensrelay.docstore.store.DocStore`): the room never
    imports the store, which creates, registers and drops rooms."""

    @property
    def batch_seconds(self) -> float: ...

    @property
    def peers(self) -> AwarenessPublisher | None: ...

    async def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    def spawn(self, coro: Any) -> asyncio.Task[Any]: ...

    async def persist(self, room: Room[Any], update: bytes, *, author: str = "") -> int: ...

    def notify_changed(self, room: Room[Any], updates: Sequence[bytes]) -> None: ...

    def maybe_compact(self, room: Room[Any]) -> None: ...


Host = TypeVar("Host", bound=RoomHost)


class Room(Generic[Host]):
    def __init__(self, *, store: Host, doc_id: str, kind: str) -> None:
        self.store: Host = store
        self.doc_id = doc_id
        self.kind = kind
        self.doc: Doc[Any] = Doc()
        self.awareness = AwarenessStates()
        self.clients: dict[Peer, set[int]] = {}
        self.last_used = time.monotonic()
        self.log_rows = 0
        self.last_logged_id = 0  # the log row of the latest change made here
        self._origin: object = SERVER
        self._pending: list[tuple[bytes, object]] = []
        self._flush_task: asyncio.Task[None] | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._subscription: Subscription | None = None
        self._rehearsal = Rehearsal(self.doc)
        self._writers = WriterDocs(self.doc)
        self._rehearsed = False
        # Whether the batch change listeners are looking at was made in this process (not only
        # applied from another's log). Work whose result is shared (backlinks written into folder
        # documents, suggestion rows) is done by the process where the change happened, once.
        self.changed_here = False
        # Set once the document is purged (DocStore.evict): nothing more is logged or sent under its id.
        self.retired = False
        self._renewed: set[int] = set()
        self._renewal_timer: asyncio.TimerHandle | None = None

    # -- loading ---------------------------------------------------------------------------------------

    def load(self, update: bytes | None, *, log_rows: int) -> None:
        """Apply the stored state before anyone can observe the Doc."""
        if update:
            self.doc.apply_update(update)
        self.log_rows = log_rows
        self._subscription = self.doc.observe(self._on_transaction)

    def close(self) -> None:
        if self._subscription is not None:
            self.doc.unobserve(self._subscription)
            self._subscription = None

    def retire(self) -> None:
        """The document was purged: drop what waits to be logged and log nothing more (a change someone
        still makes through a reference to this room is lost, as the document is)."""
        self.retired = True
        self._pending.clear()
        self._renewed.clear()
        self.close()

    # -- changes ---------------------------------------------------------------------------------------

    @contextmanager
    def transact(self, origin: object = SERVER, *, from_client: bool = False) -> Iterator[Doc]:
        """Mutate the Doc on the event loop; the change is persisted, then broadcast.

        A server write that changes the note's YAML header also updates the `frontmatter` map Relay.md
        clients keep, in the same update (a client's own update is left as it sent it).
        """
        previous, self._origin = self._origin, origin
        try:
            with self.doc.transaction():
                follower = None if from_client else FrontmatterFollower(self.doc)
                yield self.doc
                if follower is not None:
                    follower.finish()
        finally:
            self._origin = previous
        self.last_used = time.monotonic()

    @contextmanager
    def writing(self, origin: object = SERVER) -> Iterator[Doc[Any]]:
        """Like `transact`, for a change made on someone's behalf (docstore.acting): it is made on a Doc
        with the actor's own Yjs client id and its difference applied here, with the actor's entry in
        `users` (docstore.writers), so clients can tell who wrote it, and who removed what when the change
        only removes (accepting a suggestion removes its delimiters). Read the text from the Doc given, not
        from `self.doc`, inside. Without an actor, the change is the server's own."""
        actor = current_actor()
        if actor is None:
            with self.transact(origin) as doc:
                yield doc
            return
        writer = writer_for(actor)
        made: list[bytes] = []
        try:
            doc = self._writers.checkout(writer)
            watching = doc.observe(lambda event: made.append(event.update))
            try:
                with doc.transaction():
                    yield doc
            finally:
                doc.unobserve(watching)
            difference = self._writers.difference(writer)
        except BaseException:
            self._writers.discard(writer)
            raise
        try:
            with self.transact(origin) as live:
                apply_or_refuse(live, difference)
                self._writers.register(writer, deleted=deletion_set(made))
        except UpdateRefused:
            self._writers.discard(writer)
            raise

    def apply_update(
        self, update: bytes, origin: object, *, check: Callable[[Doc[Any], Doc[Any]], None] | None = None
    ) -> None:
        """Apply a binary update all or nothing.

        Raises UpdateRefused (a ValueError) if it does not decode or apply, UpdateDeclined if `check`
        (given the live Doc and a copy with the update applied) refuses it; the Doc, the log and the
        clients then never see any of it.
        """
        self._rehearsal.attempt(update, check)
        self._rehearsed = True
        try:
            with self.transact(origin, from_client=True):
                apply_or_refuse(self.doc, update)
        except UpdateRefused:
            # Only if the rehearsal Doc had drifted from the live one: what did apply is logged and
            # broadcast like any change, so the log, the peers and the clients still agree.
            logger.error("update of %s passed its rehearsal but failed on the live doc", self.doc_id)
            raise
        finally:
            self._rehearsed = False

    def _on_transaction(self, event: TransactionEvent) -> None:
        update = event.update
        if update == EMPTY_UPDATE:
            return
        if not self._rehearsed:
            self._rehearsal.follow(update)
        origin = self._origin
        if isinstance(origin, Origin) and origin.persist and not origin.author and (actor := current_label()):
            # A service changed the doc on someone's behalf: the log names them (see docstore.acting).
            origin = Origin(origin.name, author=actor)
        self._pending.append((update, origin))
        if self._flush_task is None or self._flush_task.done():
            # A task runs on the next loop turn, so every change of this turn goes out as one update.
            self._flush_task = asyncio.get_running_loop().create_task(self._flush())

    @property
    def dirty(self) -> bool:
        return bool(self._pending) or (self._flush_task is not None and not self._flush_task.done())

    async def flushed(self) -> None:
        """Wait until every change made so far is persisted and broadcast."""
        if not self.dirty:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter

    async def _flush(self) -> None:
        if self.store.batch_seconds:
            # Gather a burst from several clients into one logged row and one frame per client.
            await asyncio.sleep(self.store.batch_seconds)
        while self._pending:
            batch, self._pending = self._pending, []
            if self.retired:
                break
            logged = [(update, origin) for update, origin in batch if getattr(origin, "persist", True)]
            if logged:
                started = time.perf_counter()
                self.last_logged_id = await self.store.persist(
                    self, _merge([u for u, _ in logged]), author=_authors(logged)
                )
                metrics.persisted(time.perf_counter() - started)
                self.log_rows += 1
            frame = wire.sync_update(_merge([update for update, _ in batch]))
            origins = {id(origin) for _, origin in batch}
            started = time.perf_counter()
            sent = 0
            for peer in list(self.clients):
                # The sender already has its own change; everyone else gets the merged update.
                if origins != {id(peer)}:
                    await _send(peer, frame)
                    sent += 1
            if sent:
                metrics.updates_delivered(sent, time.perf_counter() - started)
            self.changed_here = bool(logged)
            self.store.notify_changed(self, [update for update, _ in batch])
        self.last_used = time.monotonic()
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        if not self.retired:
            self.store.maybe_compact(self)

    # -- clients ---------------------------------------------------------------------------------------

    def join(self, peer: Peer) -> None:
        self.clients[peer] = set()
        self.last_used = time.monotonic()

    async def leave(self, peer: Peer) -> None:
        client_ids = self.clients.pop(peer, set())
        self.last_used = time.monotonic()
        removal = self.awareness.remove(client_ids)
        if removal is not None:
            await self.share_awareness(removal)

    async def share_awareness(self, update: bytes) -> None:
        """Send an awareness update (who is here, cursors) to every client, on this worker and the others."""
        await self.broadcast(wire.awareness_message(update))
        if self.store.peers is not None:
            self.store.peers.publish_awareness(self.doc_id, update)

    def renew_awareness(self, client_ids: Sequence[int]) -> None:
        """Clients renewed their unchanged states: share them with the next batch of renewals."""
        self._renewed.update(client_ids)
        if self._renewal_timer is None:
            self._renewal_timer = asyncio.get_running_loop().call_later(
                AWARENESS_RENEWAL_SECONDS, self._share_renewals
            )

    def _share_renewals(self) -> None:
        self._renewal_timer = None
        # Encoded as the states stand now: a client that left meanwhile is not brought back.
        renewed, self._renewed = self._renewed, set()
        update = self.awareness.encode(renewed)
        if update != b"\x00" and not self.retired:
            self.store.spawn(self.share_awareness(update))

    async def relay_awareness(self, update: bytes) -> None:
        """An awareness update from another worker's clients: to the clients here only. It is not kept:
        clients renew their state every 15 s, and a worker that dies cannot leave stale states here."""
        await self.broadcast(wire.awareness_message(update))

    async def broadcast(self, frame: bytes) -> None:
        peers = list(self.clients)
        for peer in peers:
            await _send(peer, frame)
        if peers:
            metrics.awareness_delivered(len(peers))

    # -- reading ---------------------------------------------------------------------------------------

    def state_update(self, state_vector: bytes | None = None) -> bytes:
        return self.doc.get_update(state_vector) if state_vector else self.doc.get_update()


def _authors(batch: list[tuple[bytes, object]]) -> str:
    """The names the origins of a batch give (a socket's token or user, an admin's restore), for history."""
    return ", ".join(
        sorted({a for _, origin in batch if (a := getattr(origin, "author", "")) and isinstance(a, str)})
    )


def _merge(updates: list[bytes]) -> bytes:
    return updates[0] if len(updates) == 1 else merge_updates(*updates)


async def _send(peer: Peer, frame: bytes) -> None:
    try:
        await peer.send_frame(frame)
    except Exception:  # a dead connection must not stop delivery to the others
        logger.debug("send to %r failed", peer, exc_info=True)
