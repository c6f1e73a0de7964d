"""An assistant's presence in a room's awareness: named, with a cursor at its change, then gone."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.protocol import wire
from lensrelay.protocol.wire import Reader
from lensrelay.sync.colours import PALETTE, preferred_index
from lensrelay.sync.presence import assistant_client_id, show_assistant
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


class Listener:
    def __init__(self) -> None:
        self.frames: list[bytes] = []

    async def send_frame(self, frame: bytes) -> None:
        self.frames.append(frame)

    def states(self) -> list[tuple[int, int, Any]]:
        found = []
        for frame in self.frames:
            reader = Reader(frame)
            assert reader.var_uint() == wire.MESSAGE_AWARENESS
            update = Reader(reader.var_bytes())
            for _ in range(update.var_uint()):
                found.append((update.var_uint(), update.var_uint(), json.loads(update.var_string())))
        return found


async def test_an_assistant_appears_with_a_cursor_and_leaves_after_a_while(
    store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    document = await document_create(
        store=store, folder=folder, path="/Fox.md", text="The quick fox 🦊 jumps."
    )
    room = await store.get(document.doc_id)
    listener = Listener()
    room.join(listener)

    await show_assistant(room, name="claude", index=len("The quick fox 🦊 "), seconds=0.2)
    [(client_id, clock, state)] = listener.states()
    assert client_id == assistant_client_id("claude") and client_id < 2**32
    assert state["user"]["name"] == "claude" and state["assistant"] is True
    anchor = state["cursor"]["anchor"]
    assert state["cursor"]["head"] == anchor and set(anchor) == {"item", "assoc"}
    assert room.awareness.states[client_id]["user"]["name"] == "claude"

    await show_assistant(room, name="claude", index=0, seconds=0.2)  # a second write moves the cursor
    await asyncio.sleep(0.12)
    assert client_id in room.awareness.states  # the first removal was cancelled
    await asyncio.sleep(0.3)
    *_, (gone_id, gone_clock, gone_state) = listener.states()
    assert (gone_id, gone_state) == (client_id, None) and gone_clock > clock
    assert client_id not in room.awareness.states
    assert len(listener.states()) == 3  # shown, moved, removed once


def test_each_assistant_has_its_own_stable_id() -> None:
    assert assistant_client_id("claude") == assistant_client_id("claude")
    assert assistant_client_id("claude") != assistant_client_id("gpt")


async def test_an_assistant_shows_a_colour_no_one_in_the_room_has_and_keeps_it(
    store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    document = await document_create(store=store, folder=folder, path="/Hue.md", text="Colours.")
    room = await store.get(document.doc_id)
    listener = Listener()
    room.join(listener)
    preferred = PALETTE[preferred_index("claude")]
    # A person in the room already shows the assistant's preferred colour.
    person = json.dumps({"user": {"name": "ann", "color": preferred, "since": 1}}).encode()
    room.awareness.apply(wire.var_uint(1) + wire.var_uint(42) + wire.var_uint(1) + wire.var_bytes(person))

    await show_assistant(room, name="claude", index=0, seconds=5)
    await show_assistant(room, name="claude", index=3, seconds=5)
    colours = [state["user"]["color"] for _, _, state in listener.states()]
    assert colours[0] in PALETTE and colours[0] != preferred
    assert colours == [colours[0]] * 2  # the second write keeps it
    assert listener.states()[0][2]["user"]["colorLight"] == colours[0] + "33"
