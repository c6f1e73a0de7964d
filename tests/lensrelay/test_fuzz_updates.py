"""Malformed Yjs updates over the WebSocket and over HTTP: refused (4400 / JSON 400), never a crash
(1011 / 5xx), and the document, its update log and its snapshot stay exactly as they were."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient
from pycrdt import Doc, Text

from lensrelay.asgi import application
from lensrelay.docstore.rehearsal import UpdateRefused
from lensrelay.models import YSnapshot, YUpdate
from lensrelay.protocol import wire
from lensrelay.vault.documents import document_create

from .update_corpus import HALF_APPLYING_UPDATE, malformed_updates, refused_by_pycrdt

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS_SIZE = 150
TEXT = "héllo 😀 中\nsecond line\n"


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text=TEXT)


def stored(doc_id: str) -> tuple[list[bytes], list[bytes]]:
    updates = [
        bytes(u) for u in YUpdate.objects.filter(doc_id=doc_id).order_by("id").values_list("data", flat=True)
    ]
    snapshots = [bytes(s) for s in YSnapshot.objects.filter(doc_id=doc_id).values_list("data", flat=True)]
    return updates, snapshots


async def snapshot_of(store: Any, doc_id: str) -> tuple[bytes, str, Any]:
    room = await store.get(doc_id)
    await room.flushed()
    return room.state_update(), str(room.doc.get("contents", type=Text)), await sync_to_async(stored)(doc_id)


async def corpus_against(
    store: Any, note: Any, make_token: Any, *, seed: int
) -> tuple[str, Any, list[bytes]]:
    """An edit token, the note's stored state, and malformed updates made against that state."""
    token = await sync_to_async(make_token)("edit")
    before = await snapshot_of(store, note.doc_id)
    return token, before, malformed_updates(before[0], seed=seed, count=CORPUS_SIZE, attempts=2500)


async def test_the_half_applying_update_is_refused_and_leaves_the_doc_whole(store: Any, note: Any) -> None:
    room = await store.get(note.doc_id)
    before = await snapshot_of(store, note.doc_id)
    # pycrdt itself integrates part of it before failing: exactly what must never reach a live Doc
    assert refused_by_pycrdt(before[0], HALF_APPLYING_UPDATE)
    bare: Doc[Any] = Doc()
    bare.apply_update(before[0])
    with pytest.raises(RuntimeError):
        bare.apply_update(HALF_APPLYING_UPDATE)
    assert bare.get_update() != before[0]

    with pytest.raises(UpdateRefused):
        room.apply_update(HALF_APPLYING_UPDATE, "test")
    assert await snapshot_of(store, note.doc_id) == before
    # the room keeps taking good updates afterwards (its rehearsal Doc is rebuilt)
    client: Doc[Any] = Doc()
    client.apply_update(before[0])
    state = client.get_state()
    client.get("contents", type=Text).insert(0, "ok ")
    room.apply_update(client.get_update(state), "test")
    await room.flushed()
    assert str(room.doc.get("contents", type=Text)) == "ok " + TEXT


async def test_malformed_updates_over_the_websocket_close_4400_and_change_nothing(
    store: Any, note: Any, make_token: Any
) -> None:
    token, before, corpus = await corpus_against(store, note, make_token, seed=20261122)
    assert len(corpus) == CORPUS_SIZE
    assert sum(1 for update in corpus if _fails_beyond_decoding(before[0], update)) >= 3
    codes: dict[int, int] = {}
    for index, update in enumerate(corpus):
        step = wire.SYNC_STEP2 if index % 2 else wire.SYNC_UPDATE
        frame = wire.var_uint(wire.MESSAGE_SYNC) + wire.var_uint(step) + wire.var_bytes(update)
        comm = WebsocketCommunicator(application, f"/d/{note.doc_id}/ws/{note.doc_id}?token={token}")
        connected, _ = await comm.connect()
        assert connected
        await comm.send_to(bytes_data=frame)
        message = await comm.receive_output(timeout=5)
        while message["type"] == "websocket.send":
            message = await comm.receive_output(timeout=5)
        assert message["type"] == "websocket.close", message
        codes[message["code"]] = codes.get(message["code"], 0) + 1
        assert message["code"] == 4400, f"case {index} ({update[:40].hex()}…): {message}"
        await comm.disconnect()
    assert codes == {4400: CORPUS_SIZE}
    assert await snapshot_of(store, note.doc_id) == before


async def test_malformed_updates_over_http_get_a_json_400_and_change_nothing(
    store: Any, note: Any, make_token: Any
) -> None:
    token, before, corpus = await corpus_against(store, note, make_token, seed=1122)
    client = AsyncClient()
    for index, update in enumerate(corpus):
        response = await client.post(
            f"/d/{note.doc_id}/update",
            data=update,
            content_type="application/octet-stream",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 400, f"case {index} ({update[:40].hex()}…): {response.status_code}"
        assert response["Content-Type"] == "application/json"
        assert "nothing was applied" in response.json()["error"]
    assert await snapshot_of(store, note.doc_id) == before


def _fails_beyond_decoding(state: bytes, update: bytes) -> bool:
    scratch: Doc[Any] = Doc()
    scratch.apply_update(state)
    try:
        scratch.apply_update(update)
    except ValueError:
        return False
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:
        return True
    return False


def _random_frames(count: int, seed: int) -> list[bytes]:
    import random

    rng = random.Random(seed)
    deep = "[" * 200_000 + "]" * 200_000
    frames = [
        # awareness whose state nests deeper than the JSON parser recurses
        wire.var_uint(wire.MESSAGE_AWARENESS)
        + wire.var_bytes(
            wire.var_uint(1) + wire.var_uint(7) + wire.var_uint(1) + wire.var_bytes(deep.encode())
        ),
        # awareness state that is not UTF-8
        wire.var_uint(wire.MESSAGE_AWARENESS)
        + wire.var_bytes(
            wire.var_uint(1) + wire.var_uint(7) + wire.var_uint(1) + wire.var_bytes(b"\xff\xfe")
        ),
        # a state vector that does not decode
        wire.var_uint(wire.MESSAGE_SYNC) + wire.var_uint(wire.SYNC_STEP1) + wire.var_bytes(b"\xff" * 12),
    ]
    kinds = [wire.MESSAGE_SYNC, wire.MESSAGE_AWARENESS, wire.MESSAGE_AUTH, wire.MESSAGE_QUERY_AWARENESS, 102]
    while len(frames) < count:
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        head = wire.var_uint(rng.choice([*kinds, rng.randrange(1 << 20)]))
        if rng.random() < 0.5:
            body = wire.var_uint(rng.randrange(4)) + body
        frames.append(head + body)
    return frames


async def test_random_frames_of_every_message_type_never_crash_the_consumer(
    store: Any, note: Any, make_token: Any
) -> None:
    token = await sync_to_async(make_token)("edit")
    before = await snapshot_of(store, note.doc_id)
    closes: dict[int, int] = {}
    for index, frame in enumerate(_random_frames(120, seed=1011)):
        comm = WebsocketCommunicator(application, f"/d/{note.doc_id}/ws/{note.doc_id}?token={token}")
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_from(timeout=5)  # the server's step 1
        await comm.send_to(bytes_data=frame)
        # an exception inside the consumer would surface here (and be a 1011 under daphne)
        while not await comm.receive_nothing(timeout=0.05):
            message = await comm.receive_output(timeout=5)
            if message["type"] == "websocket.close":
                assert message["code"] == 4400, f"frame {index} {frame[:24].hex()}: {message}"
                closes[4400] = closes.get(4400, 0) + 1
                break
        await comm.disconnect()
    assert closes.get(4400, 0) > 20  # most random frames are malformed, and said to be
    assert await snapshot_of(store, note.doc_id) == before
