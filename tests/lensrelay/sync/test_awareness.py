"""Awareness is bounded: state size, client ids per connection and rate; view tokens still share presence."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from lensrelay.docstore.room import AWARENESS_RENEWAL_SECONDS
from lensrelay.docstore.store import get_store
from lensrelay.protocol import wire
from lensrelay.protocol.awareness import (
    MAX_CLIENTS_PER_CONNECTION,
    MAX_STATE_BYTES,
    AwarenessRate,
    AwarenessRefused,
    AwarenessStates,
)
from lensrelay.protocol.wire import MalformedFrame
from lensrelay.vault.documents import document_create
from tests.lensrelay.sync.test_consumer import connect, decode, handshake

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text="hello")


def update(*entries: tuple[int, int, object]) -> bytes:
    out = wire.var_uint(len(entries))
    for client_id, clock, state in entries:
        encoded = b"null" if state is None else json.dumps(state).encode()
        out += wire.var_uint(client_id) + wire.var_uint(clock) + wire.var_bytes(encoded)
    return out


def sized_state(size: int) -> dict[str, str]:
    """A JSON state whose encoding is exactly `size` bytes."""
    return {"user": "x" * (size - len(json.dumps({"user": ""})))}


async def frames_until_quiet(comm: WebsocketCommunicator, quiet: float = 0.3) -> list[tuple[int, bytes]]:
    got: list[tuple[int, bytes]] = []
    while not await comm.receive_nothing(timeout=quiet):
        kind, _, payload = decode(await comm.receive_from(timeout=5))
        got.append((kind, payload))
    return got


async def two_viewers(doc_id: str, make_token: Any) -> tuple[WebsocketCommunicator, WebsocketCommunicator]:
    """Two connections with one `view` token, past their first sync."""
    view = await sync_to_async(make_token)("view")
    first, second = await connect(doc_id, view), await connect(doc_id, view)
    await handshake(first)
    await handshake(second)
    return first, second


def test_state_size_and_client_bounds_refuse_without_changing_anything() -> None:
    states = AwarenessStates()
    states.apply(update((1, 0, {"user": "Ann"})))
    exact = update((2, 0, sized_state(MAX_STATE_BYTES)))
    assert states.receive(exact).added == [2]
    with pytest.raises(AwarenessRefused, match="over 64 KiB"):
        states.receive(update((1, 1, {"ok": 1}), (3, 0, sized_state(MAX_STATE_BYTES + 1))))
    assert states.states[1] == {"user": "Ann"} and 3 not in states.states
    many = update(*[(10 + n, 0, {"n": n}) for n in range(3)])
    with pytest.raises(AwarenessRefused, match="awareness clients on one connection"):
        states.receive(many, may_add=2)
    assert states.receive(many, may_add=3).added == [10, 11, 12]
    # relays of known states, and stale clocks, change nothing
    assert states.receive(update((1, 0, {"user": "Ann"}))).changed is False
    assert states.receive(update((1, 0, {"user": "Mallory"}))).changed is False
    assert states.states[1] == {"user": "Ann"}
    assert states.receive(update((1, 0, None))).removed == [1]  # a removal at the same clock counts


def test_rate_buckets_refill_with_time() -> None:
    now = [0.0]
    rate = AwarenessRate(clock=lambda: now[0])
    allowed = sum(rate.allow(100) for _ in range(1000))
    assert allowed == AwarenessRate.MESSAGE_BURST
    now[0] += 1.0
    assert sum(rate.allow(100) for _ in range(1000)) == AwarenessRate.MESSAGES_PER_SECOND
    now[0] += 100.0
    assert sum(rate.allow(MAX_STATE_BYTES) for _ in range(100)) == AwarenessRate.BYTE_BURST // MAX_STATE_BYTES


async def test_view_tokens_share_presence_within_bounds(store: Any, note: Any, make_token: Any) -> None:
    alice, bob = await two_viewers(note.doc_id, make_token)
    room = get_store().rooms[note.doc_id]

    fine = update((7, 1, {"user": {"name": "Alice", "color": "#f00"}}))
    await alice.send_to(bytes_data=wire.awareness_message(fine))
    assert (wire.MESSAGE_AWARENESS, fine) in await frames_until_quiet(bob)
    assert (wire.MESSAGE_AWARENESS, fine) in await frames_until_quiet(alice)  # echoed to the sender too

    huge = update((7, 2, sized_state(MAX_STATE_BYTES + 1)))
    crowd = update(*[(100 + n, 0, {"n": n}) for n in range(MAX_CLIENTS_PER_CONNECTION)])
    for refused in (huge, crowd):
        await alice.send_to(bytes_data=wire.awareness_message(refused))
        assert await frames_until_quiet(bob) == []
    notices = await frames_until_quiet(alice)
    assert [kind for kind, _ in notices] == [wire.MESSAGE_AUTH]  # one notice, then quiet
    assert b"over 64 KiB" in notices[0][1]
    assert room.awareness.states == {7: {"user": {"name": "Alice", "color": "#f00"}}}

    # the connection still works: it can query awareness and is still sent what others share
    await alice.send_to(bytes_data=wire.var_uint(wire.MESSAGE_QUERY_AWARENESS))
    assert (await frames_until_quiet(alice))[0][0] == wire.MESSAGE_AWARENESS
    await alice.disconnect()
    await bob.disconnect()


async def test_a_flood_is_cut_to_the_rate_and_relays_are_free(store: Any, note: Any, make_token: Any) -> None:
    flooder, peer = await two_viewers(note.doc_id, make_token)
    await peer.send_to(bytes_data=wire.awareness_message(update((9, 1, {"user": "Peer"}))))
    await frames_until_quiet(peer)
    await frames_until_quiet(flooder)
    sent = 300
    for clock in range(1, sent + 1):
        await flooder.send_to(bytes_data=wire.awareness_message(update((5, clock, {"c": clock}))))
    relayed = [p for kind, p in await frames_until_quiet(peer, quiet=1.0) if kind == wire.MESSAGE_AWARENESS]
    assert 0 < len(relayed) <= AwarenessRate.MESSAGE_BURST + 10, len(relayed)
    # relaying the peer's state back (as y-websocket clients do) is not broadcast again and costs nothing
    for _ in range(50):
        await flooder.send_to(bytes_data=wire.awareness_message(update((9, 1, {"user": "Peer"}))))
    assert [k for k, _ in await frames_until_quiet(peer) if k == wire.MESSAGE_AWARENESS] == []
    await flooder.disconnect()
    await peer.disconnect()


def test_renewals_of_unchanged_states_are_told_apart_from_changes() -> None:
    states = AwarenessStates()
    states.apply(update((1, 0, {"u": "Ann"}), (2, 0, {"u": "Bob"})))
    renewed = states.receive(update((1, 1, {"u": "Ann"}), (2, 1, {"u": "Bob"})))
    assert renewed.changed and renewed.renewed == (1, 2)
    # anything else in the same message makes it news for everyone at once
    assert states.receive(update((1, 2, {"u": "Ann"}), (2, 2, {"u": "Bobby"}))).renewed == ()
    assert states.receive(update((1, 3, {"u": "Ann"}), (3, 0, {"u": "Cy"}))).renewed == ()
    assert states.receive(update((1, 4, None))).renewed == ()
    # a "renewal" whose state is not the one known is checked like any new state
    with pytest.raises(MalformedFrame):
        states.receive(update((2, 3, {"u": "Bobby"}))[:-1] + b"{")
    assert states.states == {2: {"u": "Bobby"}, 3: {"u": "Cy"}}


async def test_renewals_reach_everyone_together_a_second_later(
    store: Any, note: Any, make_token: Any
) -> None:
    alice, bob = await two_viewers(note.doc_id, make_token)
    state = {"user": {"name": "Alice"}}
    await alice.send_to(bytes_data=wire.awareness_message(update((7, 1, state))))
    assert (wire.MESSAGE_AWARENESS, update((7, 1, state))) in await frames_until_quiet(bob)
    await frames_until_quiet(alice)

    await alice.send_to(bytes_data=wire.awareness_message(update((7, 2, state))))
    assert await bob.receive_nothing(timeout=0.3)  # a renewal is not news
    kind, _, payload = decode(await bob.receive_from(timeout=AWARENESS_RENEWAL_SECONDS + 2))
    assert (kind, payload) == (wire.MESSAGE_AWARENESS, update((7, 2, state)))
    assert (wire.MESSAGE_AWARENESS, update((7, 2, state))) in await frames_until_quiet(alice)

    # a renewal followed by a change: the change goes out at once, the batch carries the newest clock
    await alice.send_to(bytes_data=wire.awareness_message(update((7, 3, state))))
    moved = {"user": {"name": "Alice"}, "cursor": 4}
    await alice.send_to(bytes_data=wire.awareness_message(update((7, 4, moved))))
    kind, _, payload = decode(await bob.receive_from(timeout=0.5))
    assert (kind, payload) == (wire.MESSAGE_AWARENESS, update((7, 4, moved)))
    assert [p for _, p in await frames_until_quiet(bob, quiet=AWARENESS_RENEWAL_SECONDS + 0.5)] == [
        update((7, 4, moved))
    ]

    # renewed, then gone before the batch: the batch does not bring the client back
    await alice.send_to(bytes_data=wire.awareness_message(update((7, 5, moved))))
    await alice.disconnect()
    removal = [p for _, p in await frames_until_quiet(bob, quiet=AWARENESS_RENEWAL_SECONDS + 0.5)]
    assert removal == [update((7, 6, None))]
    assert get_store().rooms[note.doc_id].awareness.states == {}
    await bob.disconnect()
