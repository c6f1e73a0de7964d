"""Unit-level tests of the sync consumer with Channels' WebsocketCommunicator."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from pycrdt import Doc, Text

from lensrelay.asgi import application
from lensrelay.docstore.offsets import text_insert
from lensrelay.protocol import wire
from lensrelay.protocol.wire import Reader
from lensrelay.vault.documents import document_create, document_text

pytestmark = pytest.mark.django_db(transaction=True)


async def connect(doc_id: str, token: str | None, *, path: str | None = None) -> WebsocketCommunicator:
    query = f"?token={token}" if token else ""
    url = path or f"/d/{doc_id}/ws/{doc_id}"
    comm = WebsocketCommunicator(application, f"{url}{query}")
    connected, _ = await comm.connect()
    assert connected
    return comm


async def expect_close(comm: WebsocketCommunicator, code: int) -> None:
    message = await comm.receive_output(timeout=5)
    while message["type"] == "websocket.send":
        message = await comm.receive_output(timeout=5)
    assert message == {"type": "websocket.close", "code": code, "reason": message.get("reason")}


def decode(frame: bytes) -> tuple[int, int | None, bytes]:
    reader = Reader(frame)
    kind = reader.var_uint()
    if kind == wire.MESSAGE_SYNC:
        step = reader.var_uint()
        return kind, step, reader.var_bytes()
    if kind == wire.MESSAGE_AUTH:
        reader.var_uint()
        return kind, None, reader.var_bytes()
    if kind == wire.MESSAGE_AWARENESS:
        return kind, None, reader.var_bytes()
    return kind, None, frame


async def handshake(comm: WebsocketCommunicator) -> Doc:
    """Sync a fresh client Doc: read the server's step 1, send ours, apply the step 2 reply."""
    kind, step, _ = decode(await comm.receive_from(timeout=5))
    assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_STEP1)
    client = Doc()
    client.get("contents", type=Text)
    await comm.send_to(bytes_data=wire.sync_step1(client.get_state()))
    kind, step, update = decode(await comm.receive_from(timeout=5))
    assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_STEP2)
    client.apply_update(update)
    return client


def edit(client: Doc, index: int, value: str) -> bytes:
    """Insert at a Python string index (converted to pycrdt's UTF-8 offset); returns the update."""
    before = client.get_state()
    ytext = client.get("contents", type=Text)
    text_insert(ytext, current=str(ytext), index=index, value=value)
    return client.get_update(before)


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text="héllo 😀 中")


async def test_edit_reaches_other_client_and_server_doc(store: Any, note: Any, make_token: Any) -> None:
    token = await sync_to_async(make_token)("edit")
    alice, bob = await connect(note.doc_id, token), await connect(note.doc_id, token)
    alice_doc, bob_doc = await handshake(alice), await handshake(bob)
    assert str(alice_doc.get("contents", type=Text)) == "héllo 😀 中"
    await alice.send_to(bytes_data=wire.sync_update(edit(alice_doc, 9, " 文é🎉")))
    kind, step, update = decode(await bob.receive_from(timeout=5))
    assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_UPDATE)
    bob_doc.apply_update(update)
    assert str(bob_doc.get("contents", type=Text)) == "héllo 😀 中 文é🎉"
    assert await document_text(store=store, doc_id=note.doc_id) == "héllo 😀 中 文é🎉"
    assert await alice.receive_nothing(timeout=0.2)  # the sender is not sent its own change
    await alice.disconnect()
    await bob.disconnect()


async def test_read_only_token_is_denied_and_nothing_changes(store: Any, note: Any, make_token: Any) -> None:
    viewer = await connect(note.doc_id, await sync_to_async(make_token)("view"))
    editor = await connect(note.doc_id, await sync_to_async(make_token)("edit"))
    viewer_doc = await handshake(viewer)
    await handshake(editor)
    await viewer.send_to(bytes_data=wire.sync_update(edit(viewer_doc, 0, "EVIL ")))
    kind, _, reason = decode(await viewer.receive_from(timeout=5))
    assert kind == wire.MESSAGE_AUTH and b"read-only" in reason
    assert await editor.receive_nothing(timeout=0.3)
    assert await document_text(store=store, doc_id=note.doc_id) == "héllo 😀 中"
    await viewer.disconnect()
    await editor.disconnect()


async def test_suggest_token_also_syncs_read_only(store: Any, note: Any, make_token: Any) -> None:
    comm = await connect(note.doc_id, await sync_to_async(make_token)("suggest"))
    client = await handshake(comm)
    await comm.send_to(bytes_data=wire.sync_update(edit(client, 0, "x")))
    kind, _, _ = decode(await comm.receive_from(timeout=5))
    assert kind == wire.MESSAGE_AUTH
    assert await document_text(store=store, doc_id=note.doc_id) == "héllo 😀 中"
    await comm.disconnect()


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00",
        b"\x00\x02\x05ab",  # declares 5 bytes, carries 2
        b"\x00\x02\x03\xff\xff\xff",  # an update that does not decode
        b"\x00\x07\x00",  # unknown sync step
        b"\x01\x05\x01\x01",  # truncated awareness
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",  # varint overflow
    ],
)
async def test_malformed_frames_close_4400_and_leave_doc_alone(
    store: Any, note: Any, make_token: Any, frame: bytes
) -> None:
    token = await sync_to_async(make_token)("edit")
    bad, good = await connect(note.doc_id, token), await connect(note.doc_id, token)
    await handshake(bad)
    good_doc = await handshake(good)
    await bad.send_input({"type": "websocket.receive", "bytes": frame})
    await expect_close(bad, 4400)
    assert await document_text(store=store, doc_id=note.doc_id) == "héllo 😀 中"
    # The server keeps serving the others.
    await good.send_to(bytes_data=wire.sync_update(edit(good_doc, 0, "ok ")))
    await asyncio.sleep(0.1)
    assert await document_text(store=store, doc_id=note.doc_id) == "ok héllo 😀 中"
    await good.disconnect()


async def test_text_frame_closes_4400(store: Any, note: Any, make_token: Any) -> None:
    comm = await connect(note.doc_id, await sync_to_async(make_token)("edit"))
    await handshake(comm)
    await comm.send_to(text_data="hello")
    await expect_close(comm, 4400)


async def test_refusals_use_4400_range_codes(
    store: Any, note: Any, make_token: Any, make_folder: Any
) -> None:
    from lensrelay.models import ApiToken

    other = await sync_to_async(make_folder)("Other")
    scoped = await sync_to_async(make_token)("edit", (other,))
    revoked = await sync_to_async(make_token)("edit", (), "gone")
    await sync_to_async(lambda: ApiToken.objects.filter(name="gone").update(revoked_at="2020-01-01T00:00Z"))()
    valid = await sync_to_async(make_token)("edit")
    cases = [
        (note.doc_id, None, None, 4401),
        (note.doc_id, "lr_wrong", None, 4401),
        (note.doc_id, revoked, None, 4401),
        (note.doc_id, scoped, None, 4404),
        (note.doc_id + "x", valid, None, 4404),
        (note.doc_id, valid, f"/d/{note.doc_id}/ws/someone-else", 4400),
    ]
    for doc_id, token, path, code in cases:
        comm = await connect(doc_id, token, path=path)
        await expect_close(comm, code)
    assert await document_text(store=store, doc_id=note.doc_id) == "héllo 😀 中"


async def test_short_route_and_folder_doc_sync(store: Any, note: Any, make_token: Any) -> None:
    comm = await connect(note.doc_id, await sync_to_async(make_token)("view"), path=f"/ws/{note.doc_id}")
    client = await handshake(comm)
    assert str(client.get("contents", type=Text)) == "héllo 😀 中"
    await comm.disconnect()


async def test_awareness_echoed_to_all_and_removed_on_disconnect(
    store: Any, note: Any, make_token: Any
) -> None:
    token = await sync_to_async(make_token)("view")
    alice, bob = await connect(note.doc_id, token), await connect(note.doc_id, token)
    await handshake(alice)
    await handshake(bob)
    state = b'{"user":{"name":"Alice"}}'
    update = wire.var_uint(1) + wire.var_uint(42) + wire.var_uint(1) + wire.var_bytes(state)
    await alice.send_to(bytes_data=wire.awareness_message(update))
    for comm in (alice, bob):
        kind, _, payload = decode(await comm.receive_from(timeout=5))
        assert kind == wire.MESSAGE_AWARENESS and payload == update
    # A late joiner is told who is here.
    carol = await connect(note.doc_id, token)
    frames = [decode(await carol.receive_from(timeout=5)) for _ in range(2)]
    assert any(kind == wire.MESSAGE_AWARENESS and state in payload for kind, _, payload in frames)
    await alice.disconnect()
    kind, _, payload = decode(await bob.receive_from(timeout=5))
    assert kind == wire.MESSAGE_AWARENESS and payload.endswith(wire.var_bytes(b"null"))
    await bob.disconnect()
    await carol.disconnect()


async def test_sync_status_102_and_query_awareness(store: Any, note: Any, make_token: Any) -> None:
    comm = await connect(note.doc_id, await sync_to_async(make_token)("view"))
    await handshake(comm)
    status = wire.var_uint(102) + b"\x05anything"
    await comm.send_to(bytes_data=status)
    assert await comm.receive_from(timeout=5) == status
    await comm.send_to(bytes_data=wire.var_uint(wire.MESSAGE_QUERY_AWARENESS))
    kind, _, payload = decode(await comm.receive_from(timeout=5))
    assert kind == wire.MESSAGE_AWARENESS and payload == b"\x00"
    await comm.disconnect()


async def test_staff_session_syncs_read_write_from_our_own_pages_only(store: Any, note: Any) -> None:
    from channels.routing import URLRouter
    from django.contrib.auth.models import AnonymousUser, User

    from lensrelay.routing import websocket_urlpatterns

    staff = await sync_to_async(User.objects.create_superuser)("editor", "editor@example.org", "x")
    plain = await sync_to_async(User.objects.create_user)("reader", password="x")
    router = URLRouter(websocket_urlpatterns)

    async def open_as(user: Any, origin: bytes | None) -> WebsocketCommunicator:
        headers = [(b"origin", origin)] if origin else []
        comm = WebsocketCommunicator(router, f"/ws/{note.doc_id}", headers=headers)
        comm.scope["user"] = user
        connected, _ = await comm.connect()
        assert connected
        return comm

    comm = await open_as(staff, b"http://localhost:8000")
    client = await handshake(comm)
    await comm.send_to(bytes_data=wire.sync_update(edit(client, 0, "staff ")))
    await asyncio.sleep(0.1)
    assert await document_text(store=store, doc_id=note.doc_id) == "staff héllo 😀 中"
    await comm.disconnect()
    for user, origin in [(staff, b"https://evil.example"), (plain, None), (AnonymousUser(), None)]:
        await expect_close(await open_as(user, origin), 4401)


async def test_another_folders_document_is_refused_like_an_unknown_one(
    store: Any, note: Any, make_token: Any, make_folder: Any, monkeypatch: Any
) -> None:
    from lensrelay.sync import consumer

    monkeypatch.setattr(consumer, "UNKNOWN_DOC_GRACE_SECONDS", 0.4)
    other = await sync_to_async(make_folder)("Other")
    unknown = note.doc_id[:37] + "00000000-0000-4000-8000-000000000000"
    closes = []
    for role in ("view", "edit"):
        token = await sync_to_async(make_token)(role, (other,))
        for doc_id in (note.doc_id, unknown):
            started = asyncio.get_running_loop().time()
            comm = await connect(doc_id, token)
            message = await comm.receive_output(timeout=5)
            elapsed = asyncio.get_running_loop().time() - started
            closes.append((message, elapsed >= 0.4))
    # same code, same reason, same wait: nothing tells an existing id of another folder from a made-up one
    assert {repr(c) for c in closes} == {
        repr(({"type": "websocket.close", "code": 4404, "reason": "unknown document"}, True))
    }
    assert await document_text(store=store, doc_id=note.doc_id) == "héllo 😀 中"


async def test_a_disconnect_leaves_the_room_without_a_trip_to_the_sync_thread(
    store: Any, note: Any, make_token: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await sync_to_async(make_token)("edit")
    alice, bob = await connect(note.doc_id, token), await connect(note.doc_id, token)
    await handshake(alice)
    await handshake(bob)
    trips: list[str] = []

    async def counted() -> None:
        trips.append("close_old_connections")

    # Channels runs this in the sync thread before and after its disconnect handler.
    import channels.consumer
    import channels.generic.websocket

    monkeypatch.setattr(channels.consumer, "aclose_old_connections", counted)
    monkeypatch.setattr(channels.generic.websocket, "aclose_old_connections", counted)
    room = store.rooms[note.doc_id]
    assert len(room.clients) == 2
    await alice.disconnect()
    while len(room.clients) != 1:
        await asyncio.sleep(0.01)
    assert trips == []
    await bob.disconnect()
