"""Assistants at work, shown to connected Yjs clients the way a collaborator appears: an awareness state
with the assistant's name and a cursor at its change, gone a few seconds after its last write.

Each assistant has its own awareness client id, derived from its name, so two assistants show as two
people and one assistant's next write moves its cursor instead of adding another. The cursor is the
y-codemirror / y-prosemirror shape: ``{"anchor": pos, "head": pos}`` with Yjs relative-position JSON. Its
colour is picked as the editor's participants pick theirs (``lensrelay.sync.colours``), once per showing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time

from pycrdt import Assoc, StickyIndex, Text

from lensrelay.docstore.offsets import byte_offset
from lensrelay.docstore.room import Room
from lensrelay.docstore.texts import CONTENTS
from lensrelay.protocol import wire
from lensrelay.sync.colours import PALETTE, colour_for

PRESENCE_SECONDS = 4.0

_removals: dict[tuple[int, int], asyncio.TimerHandle] = {}


def assistant_client_id(name: str) -> int:
    """A stable 32-bit awareness id per assistant name (Yjs client ids are unsigned 32-bit numbers)."""
    return int.from_bytes(hashlib.sha256(f"lensrelay-assistant:{name}".encode()).digest()[:4], "big")


def _cursor(room: Room, index: int) -> dict[str, object]:
    ytext = room.doc.get(CONTENTS, type=Text)
    raw = str(ytext)
    index = max(0, min(index, len(raw)))
    # At the very end no character follows: stick to the one before.
    assoc = Assoc.AFTER if index < len(raw) else Assoc.BEFORE
    position = StickyIndex.new(ytext, byte_offset(raw, index), assoc).to_json() if raw else None
    return {"anchor": position, "head": position}


def _encode(client_id: int, state: object) -> bytes:
    # Microseconds since the epoch only grow, so every state wins over the previous one (and its removal).
    clock = time.time_ns() // 1000
    body = json.dumps(state, separators=(",", ":")).encode()
    return wire.var_uint(1) + wire.var_uint(client_id) + wire.var_uint(clock) + wire.var_bytes(body)


def _colour(room: Room, client_id: int, name: str) -> str:
    """The colour the assistant shows now, kept while it is shown (a write moves only its cursor)."""
    shown = room.awareness.state(client_id)
    user = shown.get("user") if isinstance(shown, dict) else None
    if isinstance(user, dict) and user.get("color") in PALETTE:
        return str(user["color"])
    others = (state for other, state in room.awareness.states.items() if other != client_id)
    return colour_for(name, others)


async def show_assistant(room: Room, *, name: str, index: int, seconds: float = PRESENCE_SECONDS) -> None:
    """Show ``name`` in the room's awareness with its cursor at ``index`` (a ``str`` index of the text)."""
    client_id = assistant_client_id(name)
    colour = _colour(room, client_id, name)
    state = {
        "user": {"name": name, "color": colour, "colorLight": f"{colour}33"},
        "assistant": True,
        "cursor": _cursor(room, index),
    }
    update = _encode(client_id, state)
    room.awareness.apply(update)
    await room.broadcast(wire.awareness_message(update))
    key = (id(room), client_id)
    previous = _removals.pop(key, None)
    if previous is not None:
        previous.cancel()
    _removals[key] = asyncio.get_running_loop().call_later(
        seconds, lambda: room.store.spawn(_hide(room, key, client_id))
    )


async def _hide(room: Room, key: tuple[int, int], client_id: int) -> None:
    _removals.pop(key, None)
    removal = room.awareness.remove([client_id])
    if removal is not None:
        await room.broadcast(wire.awareness_message(removal))
