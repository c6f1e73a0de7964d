"""Low-latency fan-out between worker processes over the channel layer (Redis when scaled out).

The layer delivers at most once and may be away altogether, so it only makes peers fast, never correct:
every update is in the database log first, and each process's catch-up poll applies whatever the layer
dropped. On top of that, workers repair by version: every few seconds each announces the version of the
documents its clients are editing, and a peer that has something the announcer lacks sends it.

A worker sends a document's updates and presence only to the peers that hold it, straight to each one's
channel, many documents' items to a message (`doc.batch`): whatever queued while the last message was on
its way goes out in the next. A message per update and document cost each worker, at 3,000 clients on two,
more of its event loop than its own clients' sockets (a publish, a Redis round trip, a receive and a decode
each); and while every batch went to a group of all workers, each received its own back, and with clients
grouped by document every update crossed Redis only to be dropped on the other side (issue 36).

Holdings travel in the version announcements, which go to one group every listening worker is in: a worker
names the documents it has loaded at once when it loads one (peers that hold it too answer so, `doc.held`)
and again with every announcement, each time for a stated while (`hold`). An update sent before a peer's
word arrived reaches that peer in the answer to its announcement (what it lacks) or, failing that, through
the log poll. A process that does not listen (the derive process) hears no holdings, so it sends to the
whole group, and workers drop the items of documents they have not loaded. So does a worker while a peer of
an earlier release is heard (a rolling upgrade): such a peer names no holdings and hears only the group.

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
# A worker's word that it holds its documents lasts this many of its announcement periods: one lost
# announcement does not cut a peer off.
HOLD_PERIODS = 3
# How long a peer's word that it holds a document is taken for, at most, whatever it states (a peer that
# went away without a word stops getting a document's items after this).
MAX_HOLD_SECONDS = 300.0
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
    def repair_seconds(self) -> float: ...

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
        # doc_id -> {a peer's channel: until when (monotonic) it said it holds the document}
        self._holders: dict[str, dict[str, float]] = {}
        # Until when (monotonic) a peer of an earlier release, which names no holdings, counts as present.
        self._older_peer_until = 0.0
        # Documents loaded since the last announcement of fresh loads went out, and the task sending them.
        self._fresh: list[Room] = []
        self._announcer: asyncio.Task[None] | None = None

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
            if not self.healthy:
                continue  # the log carries it
            if not self.listening or self.older_peer_present():  # every listening worker gets everything
                await self._call(self.layer.group_send, PEERS_GROUP, self._batch_message(batch))
                continue
            for channel, items in self._by_holder(batch).items():
                await self._call(self.layer.send, channel, self._batch_message(items))

    def _batch_message(self, items: list[Item]) -> dict[str, Any]:
        return {"type": "doc.batch", "items": items, "writer": self.store.writer}

    def _by_holder(self, batch: list[Item]) -> dict[str, list[Item]]:
        """The batch's items per peer channel holding their documents, in order."""
        out: dict[str, list[Item]] = {}
        for item in batch:
            for channel in self.holders(item[1]):
                out.setdefault(channel, []).append(item)
        return out

    def holders(self, doc_id: str) -> set[str]:
        """The channels of the peers that hold `doc_id` now, as far as this worker has heard."""
        now = time.monotonic()
        return {channel for channel, until in self._holders.get(doc_id, {}).items() if until > now}

    def older_peer_present(self) -> bool:
        """Whether a peer of an earlier release announced itself lately: it holds what it holds without
        saying so, and hears batches only through the group."""
        return time.monotonic() < self._older_peer_until

    def _next_batch(self) -> list[Item]:
        """Items from the front of the outbox, in order, up to `BATCH_BYTES` of updates (at least one)."""
        batch = [self._outbox.popleft()]
        size = len(batch[0][2])
        while self._outbox and size + len(self._outbox[0][2]) <= BATCH_BYTES:
            item = self._outbox.popleft()
            batch.append(item)
            size += len(item[2])
        return batch

    def loaded(self, room: Room) -> None:
        """Tell peers at once that this worker holds a document it just loaded (and how far it has got):
        they send its updates here from now on, what this worker lacks, and whether they hold it too.
        Documents loaded in the same turn of the loop, or while the last such word was on its way, go in
        one announcement: a worker's clients arriving together (a restart, a team's morning) load hundreds
        of documents in a few seconds, and every peer reads every announcement."""
        if self.healthy and self.channel is not None:
            self._fresh.append(room)
            if self._announcer is None or self._announcer.done():
                self._announcer = self.store.spawn(self._announce_fresh())

    async def _announce_fresh(self) -> None:
        await asyncio.sleep(0)  # the rest of this turn's loads join
        while self._fresh:
            rooms, self._fresh = self._fresh, []
            await self._announce(rooms, with_versions=rooms, fresh=True)

    async def announce(self, rooms: list[Room], *, with_versions: list[Room]) -> None:
        """Tell peers which documents this worker holds, for the next few announcements, and how far
        those of `with_versions` have got here; peers answer with what is missing. Holders whose word has
        run out are forgotten meanwhile."""
        self._forget_expired()
        await self._announce(rooms, with_versions=with_versions, fresh=False)

    async def _announce(self, rooms: list[Room], *, with_versions: list[Room], fresh: bool) -> None:
        if not self.healthy or self.channel is None:
            return
        versioned = {room.doc_id for room in with_versions}
        for start in range(0, len(rooms), ANNOUNCE_BATCH):
            batch = rooms[start : start + ANNOUNCE_BATCH]
            message = {
                **self._holding([room.doc_id for room in batch]),
                "type": "doc.versions",
                "versions": {
                    room.doc_id: versions.version(room.doc) for room in batch if room.doc_id in versioned
                },
                "fresh": fresh,
            }
            await self._call(self.layer.group_send, PEERS_GROUP, message)

    def _holding(self, doc_ids: list[str]) -> dict[str, Any]:
        """The part of a message that says this worker holds `doc_ids`, and where to send their items."""
        hold = HOLD_PERIODS * self.store.repair_seconds + 1.0
        return {"held": doc_ids, "hold": hold, "writer": self.store.writer, "reply": self.channel}

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for doc_id in list(self._holders):
            held = self._holders[doc_id]
            for channel in [channel for channel, until in held.items() if until <= now]:
                del held[channel]
            if not held:
                del self._holders[doc_id]

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
        if message.get("type") == "doc.held":  # the answer to an announcement of a fresh load
            self._note_holder(message)
            return
        if message.get("type") == "doc.versions":
            self._note_holder(message)
            if message.get("fresh") is True:
                await self._tell_holding(message)
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

    def _note_holder(self, message: dict[str, Any]) -> None:
        """Remember that the announcer holds the documents it names, for as long as it says (bounded)."""
        channel, held, hold = message.get("reply"), message.get("held"), message.get("hold")
        if isinstance(channel, str) and "held" not in message and message.get("type") == "doc.versions":
            self._heard_older_peer()
            return
        if not isinstance(channel, str) or not isinstance(held, list):
            return
        if not isinstance(hold, (int, float)) or isinstance(hold, bool) or not hold > 0:
            return
        until = time.monotonic() + min(float(hold), MAX_HOLD_SECONDS)
        for doc_id in held:
            if isinstance(doc_id, str):
                self._holders.setdefault(doc_id, {})[channel] = until

    def _heard_older_peer(self) -> None:
        """An announcement without holdings comes from a worker of an earlier release: until it has been
        silent for as long as a holding lasts, every batch goes to the group, which it hears (otherwise its
        clients would hear this worker's edits only through its log poll)."""
        if not self.older_peer_present():
            logger.info("a peer of an earlier release is in the group: sending every update to the group")
        hold = min(HOLD_PERIODS * self.store.repair_seconds + 1.0, MAX_HOLD_SECONDS)
        self._older_peer_until = time.monotonic() + hold

    async def _tell_holding(self, announcement: dict[str, Any]) -> None:
        """Tell a peer that just loaded documents which of them this worker holds too: otherwise it would
        send them nowhere until this worker's next announcement."""
        channel, held = announcement.get("reply"), announcement.get("held")
        if self.channel is None or not isinstance(channel, str) or not isinstance(held, list):
            return
        ours = [doc_id for doc_id in held if isinstance(doc_id, str) and doc_id in self.store.rooms]
        if ours:
            await self._call(self.layer.send, channel, {**self._holding(ours), "type": "doc.held"})

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
