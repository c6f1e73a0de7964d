"""The live path counts as it works: connections and rooms rise and fall, updates received over the
WebSocket and HTTP, deliveries, persist and broadcast times, event-loop lag. Read from this process's
registry (no multiprocess directory in tests)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient
from prometheus_client import REGISTRY
from pycrdt import Doc, Text

from lensrelay.asgi import application
from lensrelay.docstore.offsets import text_insert
from lensrelay.observability import metrics
from lensrelay.protocol import wire
from lensrelay.server import looplag
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


def sample(name: str, **labels: str) -> float:
    metrics.flush_live_counts()  # as a scrape of this process does
    return REGISTRY.get_sample_value(name, labels) or 0.0


READINGS = {
    "connections": ("lensrelay_open_connections", {}),
    "updates_ws": ("lensrelay_updates_received_total", {"transport": "websocket"}),
    "deliveries": ("lensrelay_deliveries_total", {"kind": "update"}),
    "persisted": ("lensrelay_persist_duration_seconds_count", {}),
    "broadcast": ("lensrelay_broadcast_duration_seconds_count", {}),
}


def readings() -> dict[str, float]:
    return {key: sample(name, **labels) for key, (name, labels) in READINGS.items()}


def grown(since: dict[str, float]) -> dict[str, float]:
    now = readings()
    return {key: now[key] - since[key] for key in now}


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text="hello")


async def connect(doc_id: str, token: str) -> tuple[WebsocketCommunicator, Doc]:
    comm = WebsocketCommunicator(application, f"/d/{doc_id}/ws/{doc_id}?token={token}")
    connected, _ = await comm.connect()
    assert connected
    await comm.receive_from(timeout=5)  # the server's step 1
    client: Doc = Doc()
    client.get("contents", type=Text)
    await comm.send_to(bytes_data=wire.sync_step1(client.get_state()))
    reply = await comm.receive_from(timeout=5)
    client.apply_update(_step2(reply))
    return comm, client


def _step2(frame: bytes) -> bytes:
    reader = wire.Reader(frame)
    assert reader.var_uint() == wire.MESSAGE_SYNC and reader.var_uint() == wire.SYNC_STEP2
    return reader.var_bytes()


def insert(client: Doc, value: str) -> bytes:
    before = client.get_state()
    ytext = client.get("contents", type=Text)
    text_insert(ytext, current=str(ytext), index=0, value=value)
    return client.get_update(before)


async def test_a_websocket_session_moves_every_live_metric(store: Any, note: Any, make_token: Any) -> None:
    token = await sync_to_async(make_token)("edit")
    start = readings()
    alice, alice_doc = await connect(note.doc_id, token)
    bob, _ = await connect(note.doc_id, token)
    assert grown(start)["connections"] == 2

    for n in range(3):
        await alice.send_to(bytes_data=wire.sync_update(insert(alice_doc, str(n))))
        await bob.receive_from(timeout=5)  # each update reaches Bob before the next is sent
    edited = grown(start)
    assert edited["updates_ws"] == 3
    assert edited["deliveries"] == 3  # to Bob, never back to Alice
    assert edited["persisted"] >= 3  # (the note's, and whatever else was logged meanwhile)
    assert edited["broadcast"] == 3

    await alice.disconnect()
    await bob.disconnect()
    assert grown(start)["connections"] == 0


async def test_a_refused_socket_is_never_counted_as_open(store: Any, note: Any) -> None:
    before = sample("lensrelay_open_connections")
    comm = WebsocketCommunicator(application, f"/d/{note.doc_id}/ws/{note.doc_id}?token=nope")
    await comm.connect()
    message = await comm.receive_output(timeout=5)
    assert message["type"] == "websocket.close" and message["code"] == 4401
    assert sample("lensrelay_open_connections") == before


async def test_a_read_only_socket_sends_no_counted_update(store: Any, note: Any, make_token: Any) -> None:
    token = await sync_to_async(make_token)("view")
    comm, doc = await connect(note.doc_id, token)
    before = sample("lensrelay_updates_received_total", transport="websocket")
    await comm.send_to(bytes_data=wire.sync_update(insert(doc, "x")))
    await comm.receive_from(timeout=5)  # "permission denied"
    assert sample("lensrelay_updates_received_total", transport="websocket") == before
    await comm.disconnect()


async def test_an_http_update_is_counted_as_http(store: Any, note: Any, make_token: Any) -> None:
    token = await sync_to_async(make_token)("edit")
    room = await store.get(note.doc_id)
    client: Doc = Doc()
    client.apply_update(room.doc.get_update())
    before = sample("lensrelay_updates_received_total", transport="http")
    response = await AsyncClient().post(
        f"/d/{note.doc_id}/update",
        data=insert(client, "over http "),
        content_type="application/octet-stream",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200
    refused = await AsyncClient().post(
        f"/d/{note.doc_id}/update",
        data=b"\xff\xff\xff",
        content_type="application/octet-stream",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert refused.status_code == 400
    assert sample("lensrelay_updates_received_total", transport="http") - before == 1


async def test_rooms_are_counted_while_loaded(store: Any, note: Any) -> None:
    loaded = sample("lensrelay_rooms", kind="content")
    assert note.doc_id in store.rooms
    await store.rooms[note.doc_id].flushed()
    store.idle_seconds = 0
    await store.unload_idle()
    assert note.doc_id not in store.rooms
    assert sample("lensrelay_rooms", kind="content") == loaded - 1
    assert await store.get(note.doc_id) is not None
    assert sample("lensrelay_rooms", kind="content") == loaded


def test_each_loop_lag_sample_is_exported() -> None:
    count = sample("lensrelay_event_loop_lag_seconds_count")
    slow = sample("lensrelay_event_loop_lag_seconds_bucket", le="0.1")
    gauge = looplag._Gauge()
    gauge.record(250.0, threshold_ms=0)
    assert sample("lensrelay_event_loop_lag_seconds_count") == count + 1
    assert sample("lensrelay_event_loop_lag_seconds_bucket", le="0.1") == slow  # 0.25 s is above it
    assert sample("lensrelay_event_loop_lag_last_seconds") == 0.25


def test_label_values_outside_their_sets_are_refused() -> None:
    with pytest.raises(ValueError, match="MCP outcome"):
        metrics.mcp_tool_call_observe(tool="read", outcome="weird", seconds=0.1)
    with pytest.raises(ValueError, match="decision outcome"):
        metrics.suggestion_decided_observe(outcome="pending", seconds=1)
    with pytest.raises(ValueError, match="room kind"):
        metrics.room_loaded("/Team/Secret.md")
