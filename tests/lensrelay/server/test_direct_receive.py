"""Frames the consumer takes straight from the protocol (lensrelay.server.direct) are handled like those that
come through ASGI: in the order received, refused the same way, logged before anyone else sees them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from pycrdt import Doc, Text

from lensrelay.asgi import application
from lensrelay.models import YUpdate
from lensrelay.protocol import wire
from lensrelay.server.direct import DirectSocket
from lensrelay.sync.fastpath import DIRECT_SEND
from lensrelay.vault.documents import document_create, document_text
from tests.lensrelay.sync.test_consumer import decode, edit, expect_close, handshake

pytestmark = pytest.mark.django_db(transaction=True)


class FakeDirect:
    """Stands in for the launcher's DirectSocket: takes the frames' receiver, sends nothing itself (the
    consumer falls back to ASGI, which the communicator reads)."""

    accepted = False  # the handshake is the communicator's, answered by the consumer's accept

    def __init__(self) -> None:
        self.receiver: Callable[[bytes | None, str | None], None] | None = None

    def receive_directly(self, receiver: Callable[[bytes | None, str | None], None]) -> bool:
        self.receiver = receiver
        return True

    def stop_receiving(self) -> None:
        self.receiver = None

    def send(self, frame: bytes) -> bool:
        return False


async def connect_direct(doc_id: str, token: str) -> tuple[WebsocketCommunicator, FakeDirect, Doc]:
    comm = WebsocketCommunicator(application, f"/d/{doc_id}/ws/{doc_id}?token={token}")
    direct = FakeDirect()
    comm.scope["extensions"] = {DIRECT_SEND: direct}
    connected, _ = await comm.connect()
    assert connected
    client = await handshake(comm)  # through ASGI: the consumer takes over once these are read
    for _ in range(100):
        if direct.receiver is not None:
            break
        await asyncio.sleep(0.01)
    assert direct.receiver is not None
    return comm, direct, client


async def plain(doc_id: str, token: str) -> tuple[WebsocketCommunicator, Doc]:
    comm = WebsocketCommunicator(application, f"/d/{doc_id}/ws/{doc_id}?token={token}")
    connected, _ = await comm.connect()
    assert connected
    return comm, await handshake(comm)


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text="abc")


def text_of(*updates: bytes) -> str:
    doc: Doc = Doc()
    for update in updates:
        doc.apply_update(update)
    return str(doc.get("contents", type=Text))


async def test_direct_frames_keep_their_order_and_are_logged_before_anyone_sees_them(
    store: Any, note: Any, make_token: Any
) -> None:
    token = await sync_to_async(make_token)("edit")
    writer, direct, writer_doc = await connect_direct(note.doc_id, token)
    bystander, bystander_doc = await plain(note.doc_id, token)
    rows_before = await YUpdate.objects.filter(doc_id=note.doc_id).acount()
    assert direct.receiver is not None
    receive = direct.receiver

    first = edit(writer_doc, 3, "1")
    receive(wire.sync_update(first), None)  # applied at once
    receive(wire.sync_step1(b"\x00"), None)  # waits for the first update's log write, in a task
    second = edit(writer_doc, 4, "2")
    receive(wire.sync_update(second), None)  # queued behind the step 1: must not be in its answer
    receive(wire.sync_step1(b"\x00"), None)

    kind, step, answer = decode(await writer.receive_from(timeout=5))
    assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_STEP2)
    assert text_of(answer) == "abc1"
    kind, step, answer = decode(await writer.receive_from(timeout=5))
    assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_STEP2)
    assert text_of(answer) == "abc12"

    for n in range(2):  # one frame per flush: the step 1 between them waited for the first
        kind, step, update = decode(await bystander.receive_from(timeout=5))
        assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_UPDATE)
        bystander_doc.apply_update(update)
        # Logged before it was sent.
        assert await YUpdate.objects.filter(doc_id=note.doc_id).acount() > rows_before + n
    assert str(bystander_doc.get("contents", type=Text)) == "abc12"
    assert await document_text(store=store, doc_id=note.doc_id) == "abc12"
    await writer.disconnect()
    await bystander.disconnect()


@pytest.mark.parametrize(
    "frame",
    [b"\x00\x02\x05ab", b"\x00\x02\x03\xff\xff\xff", b"\x00\x07\x00", b"\x01\x05\x01\x01"],
)
async def test_broken_direct_frames_close_4400_and_change_nothing(
    store: Any, note: Any, make_token: Any, frame: bytes
) -> None:
    token = await sync_to_async(make_token)("edit")
    comm, direct, _ = await connect_direct(note.doc_id, token)
    assert direct.receiver is not None
    direct.receiver(frame, None)
    await expect_close(comm, 4400)
    assert await document_text(store=store, doc_id=note.doc_id) == "abc"


async def test_a_direct_text_frame_closes_4400(store: Any, note: Any, make_token: Any) -> None:
    comm, direct, _ = await connect_direct(note.doc_id, await sync_to_async(make_token)("edit"))
    assert direct.receiver is not None
    direct.receiver(None, "hello")
    await expect_close(comm, 4400)


async def test_a_direct_frame_over_the_limit_closes_4413(
    store: Any, note: Any, make_token: Any, settings: Any
) -> None:
    settings.LENSRELAY_MAX_FRAME_BYTES = 64
    comm, direct, client = await connect_direct(note.doc_id, await sync_to_async(make_token)("edit"))
    assert direct.receiver is not None
    direct.receiver(wire.sync_update(edit(client, 0, "x" * 100)), None)
    await expect_close(comm, 4413)
    assert await document_text(store=store, doc_id=note.doc_id) == "abc"


async def test_a_read_only_socket_is_refused_on_the_direct_path(
    store: Any, note: Any, make_token: Any
) -> None:
    comm, direct, client = await connect_direct(note.doc_id, await sync_to_async(make_token)("view"))
    assert direct.receiver is not None
    direct.receiver(wire.sync_update(edit(client, 0, "EVIL ")), None)
    kind, _, reason = decode(await comm.receive_from(timeout=5))
    assert kind == wire.MESSAGE_AUTH and b"read-only" in reason
    assert await document_text(store=store, doc_id=note.doc_id) == "abc"


async def test_frames_after_access_is_lost_change_nothing(store: Any, note: Any, make_token: Any) -> None:
    comm, direct, client = await connect_direct(note.doc_id, await sync_to_async(make_token)("edit"))
    assert direct.receiver is not None
    receive = direct.receiver
    room = await store.get(note.doc_id)
    consumer = next(iter(room.clients))
    await consumer.access_lost(code=4401, reason="revoked")
    receive(wire.sync_update(edit(client, 0, "late ")), None)
    await expect_close(comm, 4401)
    assert await document_text(store=store, doc_id=note.doc_id) == "abc"


class FakeProtocol:
    STATE_OPEN = 1
    state = 1
    direct_receiver: Any = None

    def __init__(self) -> None:
        self.application_queue: asyncio.Queue[dict[str, object]] = asyncio.Queue()


async def test_the_protocol_is_taken_over_only_once_daphnes_queue_is_read() -> None:
    protocol = FakeProtocol()
    socket = DirectSocket(protocol)
    protocol.application_queue.put_nowait({"type": "websocket.receive", "bytes": b"\x00\x00\x01\x00"})
    assert not socket.receive_directly(lambda data, text: None)
    assert protocol.direct_receiver is None
    protocol.application_queue.get_nowait()
    assert socket.receive_directly(lambda data, text: None)
    assert protocol.direct_receiver is not None
    socket.stop_receiving()
    assert protocol.direct_receiver is None
