"""Low-latency fan-out between worker processes over the channel layer (Redis when scaled out).

The layer delivers at most once and may be away altogether, so it only makes peers fast, never correct:
every update is in the database log first, and each process's catch-up poll applies whatever the layer
dropped. On top of that, workers repair by version: every few seconds each announces the version of the
documents its clients are editing, and a peer that has something the announcer lacks sends it.

Everything a worker has for its peers goes to one group that every listening worker is in, many documents'
updates and presence to a message (`doc.batch`): whatever queued while the last message was on its way
goes out in the next. A message per update and document group cost each worker, at 3,000 clients on two,
more of its event loop than its own clients' sockets (a publish, a Redis round trip, a receive and a
decode each, issue 36). A worker drops the items of documents it has not loaded.

Nothing here raises into its callers: while Redis is away, publishing is skipped (the log carries the
changes), and once it answers again the peers' group is joined anew, because a Redis restarted empty has
forgotten it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from channels.layers import get_channel_layer

from lensrelay.docstore import versions
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.room import FOREIGN

if TYPE_CHECKING:
    from lensrelay.docstore.room import Room

logger = logging.getLogger(__name__)

# Group memberships are renewed this often even when no error was seen (a restart between two calls).
REJOIN_SECONDS = 10.0
# Updates waiting for the layer beyond this are left to the log poll.
OUTBOX_LIMIT = 10_000
# Every listening worker's channel is in this group: updates, presence and version announcements go to all
# peers at once, many documents to a message (one message per document was three times the updates' own
# traffic at 300 documents).
PEERS_GROUP = "lensrelay.peers"
ANNOUNCE_BATCH = 200
# A batch holds at most this many bytes of updates (one bigger update goes alone): Redis cuts off a
# subscriber whose unread messages pass its client output buffer limit (32 MB by default).
BATCH_BYTES = 512 * 1024

UPDATE = "u"
AWARENESS = "a"
# One item of a batch: (UPDATE, doc_id, update, log row id) or (AWARENESS, doc_id, update, 0).
Item = tuple[str, str, bytes, int]


class PeerHost(Protocol):
    """What the peer bus asks of the store it serves (`lensrelay.docstore.store.DocStore`): the bus never
    imports the store."""

    @property
    def writer(self) -> str: ...

    @property
    def rooms(self) -> Mapping[str, Room[Any]]: ...

    def spawn(self, coro: Any) -> asyncio.Task[Any]: ...

    def applied_from_peer(self, row_id: int) -> None: ...


class PeerBus:
    def __init__(self, store: PeerHost) -> None:
        self.store = store
        # False: this process sends its own updates to peers but joins no group and hears nothing (see
        # `stop_listening`).
        self.listening = True
        self.layer: Any = get_channel_layer()
        self.channel: str | None = None
        self.healthy = True
        self._task: asyncio.Task[None] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._outbox: deque[Item] = deque()
        self._joined_at = 0.0

    def stop_listening(self) -> None:
        """Hear nothing from peers from now on (call it before the first document is loaded): for a
        process that reads every change from the log anyway, news from peers is every update of every
        document it holds, received, parsed and applied a second time (the derive process: issue 36)."""
        self.listening = False

    async def start(self) -> None:
        """Start hearing peers (once; a process that stopped listening never does)."""
        if self.channel is None and self.listening:
            self.channel = await self.layer.new_channel()
            self._task = self.store.spawn(self._receive())
            await self._call(self.layer.group_add, PEERS_GROUP, self.channel)

    def publish(self, doc_id: str, update: bytes, row_id: int) -> None:
        self._enqueue((UPDATE, doc_id, update, row_id))

    def publish_awareness(self, doc_id: str, update: bytes) -> None:
        self._enqueue((AWARENESS, doc_id, update, 0))

    def _enqueue(self, item: Item) -> None:
        """One sender sends everything in order, on one connection at a time: a task per message would
        open Redis connections by the hundred under load (redis-py refuses beyond 100 per pool)."""
        if len(self._outbox) >= OUTBOX_LIMIT:
            return  # the layer cannot keep up: updates reach peers through the log, presence is renewed
        self._outbox.append(item)
        if self._sender is None or self._sender.done():
            self._sender = self.store.spawn(self._send_outbox())

    async def _send_outbox(self) -> None:
        while self._outbox:
            batch = self._next_batch()
            if self.healthy:  # otherwise the log carries it
                message = {"type": "doc.batch", "items": batch, "writer": self.store.writer}
                await self._call(self.layer.group_send, PEERS_GROUP, message)

    def _next_batch(self) -> list[Item]:
        """Items from the front of the outbox, in order, up to `BATCH_BYTES` of updates (at least one)."""
        batch = [self._outbox.popleft()]
        size = len(batch[0][2])
        while self._outbox and size + len(self._outbox[0][2]) <= BATCH_BYTES:
            item = self._outbox.popleft()
            batch.append(item)
            size += len(item[2])
        return batch

    async def announce_versions(self, rooms: list[Room]) -> None:
        """Tell peers how far these documents have got here; peers answer with what is missing."""
        if not self.healthy or self.channel is None:
            return
        for start in range(0, len(rooms), ANNOUNCE_BATCH):
            batch = {
                room.doc_id: versions.version(room.doc) for room in rooms[start : start + ANNOUNCE_BATCH]
            }
            message = {"type": "doc.versions", "versions": batch, "writer": self.store.writer}
            await self._call(self.layer.group_send, PEERS_GROUP, {**message, "reply": self.channel})

    async def renew(self) -> None:
        """Join every group again now and then: cheap, and it heals a Redis that lost its memberships.
        While the layer is away this is how its return is noticed (nothing else is sent meanwhile)."""
        if not self.healthy or time.monotonic() - self._joined_at >= REJOIN_SECONDS:
            await self._rejoin()

    # -- internals -------------------------------------------------------------------------------------

    async def _call(self, method: Any, *args: Any) -> bool:
        try:
            await method(*args)
        except Exception as exc:
            self._lost(exc)
            return False
        return True

    def _lost(self, exc: Exception) -> None:
        if self.healthy:
            logger.warning("channel layer unavailable (%s); peers catch up from the database", exc)
        self.healthy = False

    async def _rejoin(self) -> None:
        self._joined_at = time.monotonic()
        if self.channel is not None and not await self._call(self.layer.group_add, PEERS_GROUP, self.channel):
            return
        if not self.healthy:
            self.healthy = True
            logger.info("channel layer back; rejoined the peers' group")

    async def _receive(self) -> None:
        assert self.channel is not None
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._lost(exc)
                await asyncio.sleep(1)
                continue
            with failures_logged(logger, "peer message %s", message.get("type")):
                await self._handle(message)

    async def _handle(self, message: dict[str, Any]) -> None:
        if message.get("writer") == self.store.writer:
            return
        if message.get("type") == "doc.versions":
            for doc_id, version in dict(message.get("versions") or {}).items():
                if (room := self.store.rooms.get(doc_id)) is not None:
                    with failures_logged(logger, "version of %s from a peer", doc_id):
                        await self._answer_version(room, {"version": version, "reply": message.get("reply")})
            return
        if message.get("type") == "doc.batch":
            for item in list(message.get("items") or []):
                with failures_logged(logger, "item of a peer batch"):
                    await self._handle_item(item)
            return
        if message.get("type") == "doc.update":  # a repair, straight to this worker (`_answer_version`)
            await self._handle_item((UPDATE, message.get("doc_id", ""), message.get("update"), 0))

    async def _handle_item(self, item: Any) -> None:
        kind, doc_id, update, row = item
        room = self.store.rooms.get(doc_id) if isinstance(doc_id, str) else None
        if room is None:
            return  # a document this worker has not loaded: it reads the log when it loads it
        if not isinstance(update, bytes):
            logger.error("dropping a malformed peer item for %s", room.doc_id)
        elif kind == UPDATE:
            try:
                room.apply_update(update, FOREIGN)
            except ValueError:
                logger.error("dropping a malformed peer update for %s", room.doc_id)
                return
            if isinstance(row, int) and row > 0:
                self.store.applied_from_peer(row)
        elif kind == AWARENESS:
            await room.relay_awareness(update)

    async def _answer_version(self, room: Room, message: dict[str, Any]) -> None:
        if room.dirty:
            return  # not all of it is durable yet: answer the next announcement instead
        theirs = message["version"]
        if versions.covers(theirs, versions.version(room.doc)):
            return
        # What they lack, straight to them. It is in the database already (all content is logged
        # before anyone sees it), so they apply it without logging it again.
        missing = room.doc.get_update(versions.state_of(theirs))
        reply = {"type": "doc.update", "doc_id": room.doc_id, "update": missing, "writer": self.store.writer}
        await self._call(self.layer.send, message["reply"], reply)
