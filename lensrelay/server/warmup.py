"""Work done once at start-up that the first client of a fresh server would otherwise wait for.

A first sync on a freshly started server used to take several times as long as one a moment later: the
document store and its database thread were created, that thread opened its connection, and the
connect-time lookups ran their code for the first time, all while the first client waited. The launcher
(`lensrelay.server.serve`) runs `warm_up` as soon as the event loop turns, before any client can have
connected in practice; it reads nothing a client could see and changes nothing. If it fails, clients simply
pay the cost themselves, as before.

Besides the store's thread, it runs once what a connect runs on the loop: a WebSocket connect with a
token nobody has goes through the ASGI application (the URL patterns are compiled on their first match,
the middleware and the consumer run for the first time, the loop's own SQLite connection for the
lookups is opened) and is refused there; the loop's room reads run for an id nobody has; and a room is
built, loaded, encoded for a sync and dropped without ever being registered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from pycrdt import Doc, Text

from lensrelay.docstore import persistence
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, get_store
from lensrelay.protocol import wire

logger = logging.getLogger(__name__)

# No document has this id, and no token this value: the lookups run their queries and find nothing.
_NOBODY = "lensrelay-warm-up"


async def warm_up(application: Any) -> None:
    """`application` is the ASGI application the server runs (daphne's `Server.application`)."""
    from lensrelay.sync.consumer import token_access_and_scope

    started = time.perf_counter()
    try:
        store = get_store()  # the store of the server's loop, and its threads
        await store.db(persistence.doc_kind, _NOBODY)
        await store.db(persistence.load_state, _NOBODY)
        await store.db(persistence.feed_origin, window=store.CATCH_UP_WINDOW)
        await token_access_and_scope(_NOBODY, _NOBODY)
        await refused_connect(application)
        store.warm_loop_reads(_NOBODY)
        unregistered_room(store)
    except Exception:
        logger.warning("warming up the sync path failed; the first clients will wait for it", exc_info=True)
    else:
        logger.info("sync path warmed up in %.0f ms", (time.perf_counter() - started) * 1000)


async def refused_connect(application: Any) -> list[dict[str, Any]]:
    """A WebSocket connect to /d/<nobody> with an unknown token, through the whole ASGI application;
    returns what the application sent (an accept, then a close with 4401)."""
    messages: list[dict[str, Any]] = [{"type": "websocket.connect"}]
    sent: list[dict[str, Any]] = []
    closed = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await closed.wait()
        return {"type": "websocket.disconnect", "code": 4401}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "websocket.close":
            closed.set()

    path = f"/d/{_NOBODY}/ws/{_NOBODY}"
    scope = {
        "type": "websocket",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": f"token={_NOBODY}".encode(),
        "headers": [(b"host", b"127.0.0.1")],
        "subprotocols": [],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    await asyncio.wait_for(application(scope, receive, send), timeout=10)
    return sent


def unregistered_room(store: DocStore) -> None:
    """Build, load and encode a room the way a first sync does; the store never holds it."""
    doc: Doc = Doc()
    doc.get("contents", type=Text).insert(0, _NOBODY)
    room = Room(store=store, doc_id=_NOBODY, kind="content")
    room.load(doc.get_update(), log_rows=0)
    try:
        wire.sync_step1(room.doc.get_state())
        wire.sync_step2(room.state_update(Doc().get_state()))
    finally:
        room.close()
