"""Workers' fan-out over the channel layer: updates and presence batched, sent only to the peers that said
they hold the document, repair by version when messages are dropped, presence across workers, hostile
batches and holdings, and a layer outage that neither raises into the store nor leaves the group unjoined
afterwards.

Two stores on one event loop stand in for two workers (each its own writer), sharing one in-memory
channel layer wrapped to drop or refuse messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from pycrdt import Text

from lensrelay.docstore import peers
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.peers import AWARENESS, PEERS_GROUP, UPDATE, PeerBus
from lensrelay.docstore.store import DocStore
from lensrelay.protocol import wire
from lensrelay.sync.consumer import SyncConsumer
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


class FaultyLayer:
    """An in-memory layer that can drop document updates, or refuse every call."""

    def __init__(self) -> None:
        self.inner = InMemoryChannelLayer()
        self.drop_updates = False
        self.down = False
        # (group or channel, message type) of every message sent, and the items of every batch
        self.sent: list[tuple[str, str]] = []
        self.batches: list[list[Any]] = []
        # While set and not yet released, a message of these types waits for it on its way.
        self.hold: asyncio.Event | None = None
        self.held_types = ("doc.batch",)

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("Redis is away")

    async def new_channel(self) -> str:
        return str(await self.inner.new_channel())

    async def group_add(self, group: str, channel: str) -> None:
        self._check()
        await self.inner.group_add(group, channel)

    async def group_discard(self, group: str, channel: str) -> None:
        self._check()
        await self.inner.group_discard(group, channel)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if await self._passes(group, message):
            await self.inner.group_send(group, message)

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        if await self._passes(channel, message):
            await self.inner.send(channel, message)

    async def _passes(self, target: str, message: dict[str, Any]) -> bool:
        self._check()
        self.sent.append((target, message["type"]))
        if message["type"] == "doc.batch":
            self.batches.append(list(message["items"]))
        if self.hold is not None and message["type"] in self.held_types:
            await self.hold.wait()
        return not (self.drop_updates and message["type"] in ("doc.update", "doc.batch"))

    async def receive(self, channel: str) -> Any:
        while self.down:
            await asyncio.sleep(0.01)
            if self.down:
                raise ConnectionError("Redis is away")
        return await self.inner.receive(channel)

    def members(self, group: str) -> set[str]:
        return set(self.inner.groups.get(group, {}))


class Recorder:
    def __init__(self) -> None:
        self.frames: list[bytes] = []

    async def send_frame(self, frame: bytes) -> None:
        self.frames.append(frame)


@pytest.fixture
async def workers(transactional_db: None) -> AsyncIterator[tuple[DocStore, DocStore, FaultyLayer]]:
    layer = FaultyLayer()
    loop = asyncio.get_running_loop()
    pair = (DocStore(loop), DocStore(loop))
    for store in pair:
        store.peers = PeerBus(store)
        store.peers.layer = layer
    yield pair[0], pair[1], layer
    for store in pair:
        await store.close()


async def shared_note(first: DocStore, second: DocStore) -> tuple[Any, Any]:
    from lensrelay.vault.folders import folder_create

    folder = await sync_to_async(folder_create)(name="Lens")
    note = await document_create(store=first, folder=folder, path="/Note.md", text="start")
    rooms = await first.get(note.doc_id), await second.get(note.doc_id)
    await both_hold(first, second, note.doc_id)
    return rooms


async def both_hold(first: DocStore, second: DocStore, doc_id: str) -> None:
    """Wait until each worker has heard that the other holds the document, if it listens (the one that
    loads it second announces it, and the first answers that it holds it too)."""
    pairs = [(a.peers, b.peers) for a, b in ((first, second), (second, first)) if a.peers and b.peers]
    await eventually(lambda: all(b.channel in a.holders(doc_id) for a, b in pairs if a.channel and b.channel))


def text(room: Any) -> str:
    return str(room.doc.get("contents", type=Text))


async def eventually(check: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "never happened"
        await asyncio.sleep(0.02)


async def announce(store: DocStore, rooms: list[Any]) -> None:
    """What the store's maintenance does every few seconds: these rooms held, and how far they have got."""
    assert store.peers is not None
    await store.peers.announce(rooms, with_versions=rooms)


async def edit(room: Any, value: str, *, index: int = 0) -> None:
    """Insert into the note's text on this worker and wait until it is logged and sent."""
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_insert(ytext, current=str(ytext), index=index, value=value)
    await room.flushed()


async def test_updates_reach_the_other_worker_through_the_layer(workers: Any) -> None:
    first, second, _ = workers
    a, b = await shared_note(first, second)
    await second.catch_up()  # the rows logged before B loaded the note (the poll re-reads a window)
    ytext = a.doc.get("contents", type=Text)
    with a.transact():
        text_insert(ytext, current=str(ytext), index=0, value="fast ")
    await eventually(lambda: text(b) == "fast start")
    # The log poll neither fetches nor applies again what the layer delivered.
    await a.flushed()
    assert await second.catch_up() == 0


async def test_what_queues_while_a_message_is_on_its_way_goes_out_in_one_message_in_order(
    workers: Any,
) -> None:
    first, second, layer = workers
    a, b = await shared_note(first, second)
    await second.catch_up()
    layer.hold = asyncio.Event()
    layer.batches.clear()
    await edit(a, "1 ")  # its message waits in the layer
    watcher = Recorder()
    b.join(watcher)
    presence = wire.var_uint(1) + wire.var_uint(7) + wire.var_uint(1) + wire.var_bytes(b'{"user":"bo"}')
    for n in range(2, 6):
        await edit(a, f"{n} ")
    a.awareness.apply(presence)
    await a.share_awareness(presence)
    assert len(layer.batches) == 1
    layer.hold.set()
    await eventually(lambda: text(b) == "5 4 3 2 1 start")
    await eventually(lambda: wire.awareness_message(presence) in watcher.frames)
    assert len(layer.batches) == 2, "the four edits and the presence queued behind the first went as one"
    assert [item[0] for item in layer.batches[1]] == [UPDATE] * 4 + [AWARENESS]
    assert all(item[1] == a.doc_id for item in layer.batches[1])
    await a.flushed()
    assert await second.catch_up() == 0  # every row came through the layer and is known as applied


async def test_a_batch_holds_at_most_its_bytes_and_a_bigger_update_goes_alone(
    workers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, layer = workers
    a, b = await shared_note(first, second)
    await second.catch_up()
    monkeypatch.setattr(peers, "BATCH_BYTES", 200)
    layer.hold = asyncio.Event()
    layer.batches.clear()
    await edit(a, "x")
    for value in ("small ", "y" * 400, "tiny "):
        await edit(a, value)
    layer.hold.set()
    await eventually(lambda: text(b) == "tiny " + "y" * 400 + "small xstart")
    sizes = [[len(item[2]) for item in batch] for batch in layer.batches]
    assert [len(batch) for batch in sizes] == [1, 1, 1, 1], sizes
    assert max(sizes[2]) > 400  # the big one alone
    layer.batches.clear()
    layer.hold = asyncio.Event()
    await edit(a, "p")
    for value in ("q", "r", "s"):
        await edit(a, value)
    layer.hold.set()
    await eventually(lambda: text(b).startswith("srqp"))
    assert [len(batch) for batch in layer.batches] == [1, 3]  # small ones share one


async def test_a_hostile_batch_spoils_only_its_own_items(workers: Any) -> None:
    first, second, layer = workers
    second.poll_seconds = 3600  # B has the edit below from the hostile batch alone, not from the log...
    a, b = await shared_note(first, second)
    await second.catch_up()
    layer.drop_updates = True  # ...nor from the layer
    ytext = a.doc.get("contents", type=Text)
    before = a.doc.get_state()
    with a.transact():
        text_insert(ytext, current=str(ytext), index=0, value="kept ")
    good = a.doc.get_update(before)
    hostile = {
        "type": "doc.batch",
        "writer": "someone else",
        "items": [
            "not an item",
            [UPDATE, a.doc_id],
            [UPDATE, a.doc_id, "text, not bytes", 0],
            [UPDATE, a.doc_id, b"\xff\xfe not an update", 0],
            [UPDATE, 12, good, 0],
            [UPDATE, "no-such-doc", good, 0],
            ["x", a.doc_id, good, 0],
            [UPDATE, a.doc_id, good, "row"],
        ],
    }
    await a.flushed()
    await asyncio.sleep(0.05)
    assert text(b) == "start"
    await second.peers._handle(hostile)
    assert text(b) == "kept start"  # the one well-formed item, once
    assert text(b) == text(a)


async def test_a_dropped_update_is_repaired_by_version_without_the_database_poll(workers: Any) -> None:
    first, second, layer = workers
    a, b = await shared_note(first, second)
    b.join(Recorder())  # B has a client, so it announces how far it has got
    layer.drop_updates = True
    await edit(a, " lost in transit", index=5)
    await asyncio.sleep(0.1)
    assert text(b) == "start"  # dropped, and nobody polls the log in this test
    await announce(second, [b])
    await eventually(lambda: text(b) == "start lost in transit")


async def test_announcements_go_to_every_peer_many_documents_a_message(
    workers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, layer = workers
    a, b = await shared_note(first, second)
    from lensrelay.vault.folders import folder_create

    other = await document_create(
        store=first, folder=await sync_to_async(folder_create)(name="More"), path="/Other.md", text="x"
    )
    a2 = await first.get(other.doc_id)
    b2 = await second.get(other.doc_id)
    await both_hold(first, second, other.doc_id)
    layer.drop_updates = True
    for room in (a, a2):
        await edit(room, "missed ")
    layer.sent.clear()
    await announce(second, [b, b2])
    to_all = [sent for sent in layer.sent if sent[0] == PEERS_GROUP]
    assert to_all == [(PEERS_GROUP, "doc.versions")]  # both documents in one message
    await eventually(lambda: text(b) == "missed start" and text(b2) == "missed x")

    monkeypatch.setattr(peers, "ANNOUNCE_BATCH", 1)
    layer.sent.clear()
    await announce(second, [b, b2])
    assert [sent for sent in layer.sent if sent[0] == PEERS_GROUP] == [(PEERS_GROUP, "doc.versions")] * 2


async def test_a_malformed_version_in_an_announcement_spoils_only_its_own_document(workers: Any) -> None:
    first, second, layer = workers
    a, b = await shared_note(first, second)
    layer.drop_updates = True
    await edit(a, "repaired ")
    assert second.peers.channel is not None
    hostile = {
        "type": "doc.versions",
        "writer": second.writer,
        "reply": second.peers.channel,
        "versions": {"no-such-doc": b"\xff", a.doc_id: b"\xff\xff\xff"},
    }
    await first.peers._handle({**hostile, "writer": "someone else"})  # garbage: logged, nothing sent
    assert text(b) == "start"
    hostile["versions"] = {"no-such-doc": b"\xff", a.doc_id: b"\x00\x00"}
    await first.peers._handle({**hostile, "writer": "someone else"})
    await eventually(lambda: text(b) == "repaired start")


async def test_presence_reaches_clients_on_the_other_worker(workers: Any) -> None:
    first, second, _ = workers
    a, b = await shared_note(first, second)
    watcher = Recorder()
    b.join(watcher)
    update = wire.var_uint(1) + wire.var_uint(42) + wire.var_uint(1) + wire.var_bytes(b'{"user":"ada"}')
    a.awareness.apply(update)
    await a.share_awareness(update)
    await eventually(lambda: wire.awareness_message(update) in watcher.frames)


async def test_a_layer_outage_never_raises_and_groups_are_rejoined_after_it(workers: Any) -> None:
    first, second, layer = workers
    a, b = await shared_note(first, second)
    layer.down = True
    await edit(a, "during ")  # logged; publishing failed quietly
    assert not first.peers.healthy
    # Redis comes back empty: it has forgotten every group.
    layer.inner = InMemoryChannelLayer()
    layer.down = False
    await asyncio.sleep(1.2)  # the receive loop notices and rejoins
    await eventually(lambda: layer.members(PEERS_GROUP) == {first.peers.channel, second.peers.channel})
    await second.catch_up()  # what the layer missed comes from the log...
    assert text(b) == "during start"
    await edit(a, "after ")
    await eventually(lambda: text(b) == "after during start")  # ...and the fast path is back, unpolled


def test_sync_sockets_do_not_subscribe_to_the_channel_layer() -> None:
    # Channels' consumer would otherwise run a layer receive loop per socket, and close the socket
    # (1011) when Redis goes away.
    assert get_channel_layer(SyncConsumer.channel_layer_alias) is None


async def test_a_process_that_stopped_listening_hears_nothing_but_its_own_updates_still_go_out(
    workers: Any,
) -> None:
    first, second, layer = workers
    for store in (first, second):
        store.poll_seconds = 3600  # so whatever arrives meanwhile came through the layer
    first.peers.stop_listening()  # as the derive process does
    a, b = await shared_note(first, second)
    await second.catch_up()
    assert first.peers.channel is None
    assert layer.members(PEERS_GROUP) == {second.peers.channel}
    layer.sent.clear()
    await edit(a, "derived ")
    await eventually(lambda: text(b) == "derived start")
    # It hears no announcements, so it knows no holders: its batches go to every listening worker.
    assert [target for target, kind in layer.sent if kind == "doc.batch"] == [PEERS_GROUP]
    await edit(b, "typed ")
    await asyncio.sleep(0.3)
    assert text(a) == "derived start"  # not heard
    assert await first.catch_up() == 1  # the log has it
    assert text(a) == "typed derived start"


def test_the_channel_layers_redis_connections_parse_in_c() -> None:
    # redis-py falls back to its parser in Python, silently, when hiredis is missing or of a version it does
    # not take: every message between workers would then cost several times the CPU (issue 36).
    from channels_redis.utils import create_pool, decode_hosts

    pool = create_pool(decode_hosts([{"address": "redis://127.0.0.1:6379"}])[0])
    assert type(pool.make_connection()._parser).__name__ == "_AsyncHiredisParser"


async def test_updates_go_only_to_the_peers_that_hold_the_document(workers: Any) -> None:
    first, second, layer = workers
    for store in (first, second):
        store.poll_seconds = 3600  # no periodic announcements: what is known came from the loads
    from lensrelay.vault.folders import folder_create

    folder = await sync_to_async(folder_create)(name="Lens")
    note = await document_create(store=first, folder=folder, path="/Note.md", text="start")
    a = await first.get(note.doc_id)
    await second.start_feed()
    await second.peers.start()
    await edit(a, "alone ")
    assert layer.batches == []  # no peer holds it: nothing crosses the layer

    b = await second.get(note.doc_id)  # second announces it; first answers that it holds it too
    await both_hold(first, second, note.doc_id)
    assert text(b) == "alone start"
    layer.sent.clear()
    await edit(a, "shared ")
    await eventually(lambda: text(b) == "shared alone start")
    await edit(b, "back ")
    await eventually(lambda: text(a) == "back shared alone start")
    batches = [target for target, kind in layer.sent if kind == "doc.batch"]
    # Each went straight to the other worker: none to the group, so neither heard its own back.
    assert batches == [second.peers.channel, first.peers.channel]


def holding(doc_ids: list[Any], *, reply: str, hold: Any = 10, kind: str = "doc.versions") -> dict[str, Any]:
    """Another worker's word that it holds `doc_ids`: an announcement naming no versions, or an answer."""
    return {
        "type": kind,
        "writer": "another worker",
        "reply": reply,
        "held": doc_ids,
        "hold": hold,
        "versions": {},
    }


async def test_a_peer_whose_word_runs_out_gets_nothing_more(
    workers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, layer = workers
    a, b = await shared_note(first, second)
    held = holding([a.doc_id], reply="specific.gone", hold=0.3)
    await first.peers._handle(held)
    assert first.peers.holders(a.doc_id) == {second.peers.channel, "specific.gone"}
    await edit(a, "one ")
    assert ("specific.gone", "doc.batch") in layer.sent
    await asyncio.sleep(0.35)
    layer.sent.clear()
    await edit(a, "two ")
    await eventually(lambda: text(b) == "two one start")
    assert [target for target, kind in layer.sent if kind == "doc.batch"] == [second.peers.channel]
    # However long a peer says it holds a document, its word lasts at most MAX_HOLD_SECONDS.
    monkeypatch.setattr(peers, "MAX_HOLD_SECONDS", 0.2)
    await first.peers._handle({**held, "hold": 10**9})
    assert "specific.gone" in first.peers.holders(a.doc_id)
    await asyncio.sleep(0.25)
    assert first.peers.holders(a.doc_id) == {second.peers.channel}


@pytest.mark.parametrize(
    "changes",
    [{"held": a_doc} for a_doc in ("one id, not a list", None, {"an": "object"}, 7)]
    + [{"hold": hold} for hold in (-1, 0, float("nan"), "10", True, None, [5])]
    + [{"reply": reply} for reply in (None, 12, ["specific.x"])],
)
async def test_a_malformed_holding_is_ignored(workers: Any, changes: dict[str, Any]) -> None:
    first, second, _ = workers
    a, b = await shared_note(first, second)
    for kind in ("doc.versions", "doc.held"):
        await first.peers._handle({**holding([a.doc_id], reply="specific.stranger", kind=kind), **changes})
    assert first.peers.holders(a.doc_id) == {second.peers.channel}
    # Ids that are not strings are skipped; the rest of the list still counts.
    await first.peers._handle(holding([3, None, a.doc_id], reply="specific.ok", kind="doc.held"))
    assert first.peers.holders(a.doc_id) == {second.peers.channel, "specific.ok"}
    await edit(a, "still ")
    await eventually(lambda: text(b) == "still start")


async def test_while_a_peer_of_an_earlier_release_is_heard_batches_go_to_the_group(
    workers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, layer = workers
    a, b = await shared_note(first, second)
    # A worker of the release before holdings: in the group, it announces versions with no "held".
    older = await layer.new_channel()
    await layer.group_add(PEERS_GROUP, older)
    older_announcement = {"type": "doc.versions", "versions": {}, "writer": "older", "reply": older}
    monkeypatch.setattr(first, "repair_seconds", 0.1)  # its word lasts 3 periods and a second: 1.3 s
    await first.peers._handle(older_announcement)
    assert first.peers.older_peer_present()
    layer.sent.clear()
    await edit(a, "upgrade ")
    await eventually(lambda: text(b) == "upgrade start")
    assert [target for target, kind in layer.sent if kind == "doc.batch"] == [PEERS_GROUP]
    heard = await asyncio.wait_for(layer.inner.receive(older), 1)
    assert heard["type"] == "doc.batch" and [item[1] for item in heard["items"]] == [a.doc_id]
    # A malformed announcement of the new shape (holdings not a list) is not taken for an older peer's.
    first.peers._older_peer_until = 0.0
    await first.peers._handle({**older_announcement, "held": None})
    assert not first.peers.older_peer_present()
    # Once it has been silent for as long as a holding lasts, batches go to the holders alone again.
    await first.peers._handle(older_announcement)
    await asyncio.sleep(1.4)
    assert not first.peers.older_peer_present()
    layer.sent.clear()
    await edit(a, "after ")
    await eventually(lambda: text(b) == "after upgrade start")
    assert [target for target, kind in layer.sent if kind == "doc.batch"] == [second.peers.channel]


async def test_documents_loaded_together_are_announced_in_one_message(workers: Any) -> None:
    first, second, layer = workers
    for store in (first, second):
        store.poll_seconds = 3600  # no periodic announcements: only the loads' words go out
    from lensrelay.vault.folders import folder_create

    folder = await sync_to_async(folder_create)(name="Lens")
    notes = [
        await document_create(store=second, folder=folder, path=f"/Note {n}.md", text=f"note {n}")
        for n in range(5)
    ]
    await second.peers.start()
    await asyncio.sleep(0.05)  # second's own words about the notes it made are out
    layer.sent.clear()
    layer.hold, layer.held_types = asyncio.Event(), ("doc.versions",)
    # Three loads in one turn; the first announcement waits on its way while two more load one by one.
    rooms = list(await asyncio.gather(*(first.get(note.doc_id) for note in notes[:3])))
    await asyncio.sleep(0.05)
    rooms += [await first.get(note.doc_id) for note in notes[3:]]
    await asyncio.sleep(0.05)
    assert layer.sent == [(PEERS_GROUP, "doc.versions")]
    layer.hold.set()
    await eventually(lambda: layer.sent.count((PEERS_GROUP, "doc.versions")) == 2)
    await asyncio.sleep(0.05)
    assert layer.sent.count((PEERS_GROUP, "doc.versions")) == 2  # the turn's three, then the two that waited
    for note in notes:  # every document loaded is held, as far as each peer has heard
        await both_hold(first, second, note.doc_id)
    b = second.rooms[notes[4].doc_id]
    await edit(b, "heard ")
    await eventually(lambda: text(rooms[4]) == "heard note 4")
