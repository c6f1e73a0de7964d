"""The sync consumer's fast path: client frames taken straight from the server's protocol, frames written
straight into it, and Channels' per-message thread trips skipped. All of it lives in `DirectFrames`, a
mixin, so the consumer itself reads as any Channels consumer: `connect`, `receive`, `disconnect`.

The launcher (`lensrelay.server.serve`) puts an object of the `DirectSocket` shape in each WebSocket scope
under `extensions[DIRECT_SEND]` (`lensrelay.server.direct.DirectSocket`, written against daphne and
autobahn). The mixin knows only this contract: under another ASGI server, or Channels' test communicator,
there is no such extension and it uses the ASGI send and receive as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from channels.exceptions import StopConsumer
from channels.layers import get_channel_layer

if TYPE_CHECKING:
    # Type-checked as the consumer it is mixed into; at run time a plain mixin.
    from channels.generic.websocket import AsyncWebsocketConsumer as _Consumer
else:
    _Consumer = object

logger = logging.getLogger(__name__)

DIRECT_SEND = "lensrelay.direct_send"

# Called with each frame the client sends: (bytes, None) for a binary frame, (None, text) for text.
Receiver = Callable[[bytes | None, str | None], None]


class DirectSocket(Protocol):
    @property
    def accepted(self) -> bool:
        """Whether the server has already answered this socket's handshake."""
        ...

    def receive_directly(self, receiver: Receiver) -> bool:
        """Have the client's frames handed to `receiver` as they are read; False, and nothing changes, while
        frames received before still wait in the ASGI queue (read those first, then ask again)."""
        ...

    def stop_receiving(self) -> None: ...

    def send(self, frame: bytes) -> bool:
        """Write one binary frame now; False if the socket is not open (use the ASGI send instead)."""
        ...


class DirectFrames(_Consumer):
    """Mixed into an `AsyncWebsocketConsumer` (before it) that joins a room in `connect`.

    Once `room` is set (the consumer is connected), each client frame is handed to `receive_now`, a
    synchronous hook that may take it at once (an ordinary update: no task switch), and otherwise to
    `receive` in a task, one frame after the other in the order received. `send_frame` writes a frame
    through the direct socket when there is one. The consumer overrides `connect`, `receive`,
    `receive_now` and `disconnect`; everything else here is plumbing.
    """

    # Set by the consumer once it has joined its room: frames are then taken straight from the protocol.
    room: object | None

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        # Frames taken straight from the protocol that wait for the one before them, and the task handling
        # them in order.
        self._direct = False
        self._inbox: deque[tuple[str | None, bytes | None]] = deque()
        self._draining: asyncio.Task[None] | None = None

    def receive_now(self, bytes_data: bytes) -> bool:
        """Take a binary frame synchronously, as it is read; False leaves it to `receive`."""
        return False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if get_channel_layer(self.channel_layer_alias) is not None:
            await super().__call__(scope, receive, send)
            return
        # Channels' loop serves a socket and a channel layer together: a new task per message and an
        # asyncio.wait around it. This consumer has no layer, so it awaits the socket's messages itself.
        self.scope = scope
        self.channel_layer = None
        self.base_send = send
        with contextlib.suppress(StopConsumer):
            while True:
                if self.room is not None and not self._direct:
                    # Connected: take the frames straight from the protocol, once daphne's queue holds
                    # nothing that came before them (frames the client sent while we connected).
                    direct = self._direct_socket()
                    self._direct = direct is not None and direct.receive_directly(self.frame_received)
                await self.dispatch(await receive())

    async def dispatch(self, message: dict[str, object]) -> None:
        # Channels' AsyncConsumer.dispatch runs close_old_connections() in the sync thread before every
        # message; frames touch no Django connection here, so skip that thread hop for them. A connect
        # checks its connection in its own lookup's trip instead (one trip, not two, per first sync), and
        # keeps it open: with CONN_MAX_AGE=0 close_old_connections() closes it every time, and each
        # connect would open a new one.
        if message["type"] == "websocket.receive":
            await self.websocket_receive(message)
        elif message["type"] == "websocket.connect":
            await self.websocket_connect(message)
        elif message["type"] == "websocket.disconnect":
            # Leaving a room touches no Django connection either; the thread trip cost every disconnect
            # a wake-up of the sync thread, which then contends for the GIL with the loop's connects.
            await self.websocket_disconnect(message)
        else:
            await super().dispatch(message)

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        # Under the launcher a sync socket's handshake was answered as soon as it was read
        # (`lensrelay.server.daphne_server.accepts_first`): a second answer would change nothing.
        direct = self._direct_socket()
        if direct is None or not direct.accepted:
            await super().accept(subprotocol, headers)

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        # Channels' own handler also closes old connections in the sync thread after `disconnect`: the
        # same trip as above, and this consumer joins no channel-layer group to discard.
        if self._direct and (direct := self._direct_socket()) is not None:
            direct.stop_receiving()
        await self.disconnect(message["code"])
        raise StopConsumer()

    def _direct_socket(self) -> DirectSocket | None:
        direct: DirectSocket | None = self.scope.get("extensions", {}).get(DIRECT_SEND)
        return direct

    async def send_frame(self, frame: bytes) -> None:
        direct = self._direct_socket()
        if direct is None or not direct.send(frame):
            await self.send(bytes_data=frame)

    def frame_received(self, bytes_data: bytes | None, text_data: str | None) -> None:
        """One frame from the client, as autobahn read it. Handled in the order received: a frame
        `receive_now` takes is done at once when nothing is waiting before it; anything else (or anything
        after it) goes through `receive` in a task, one frame after the other."""
        if self._inbox or self._draining is not None:
            self._inbox.append((text_data, bytes_data))
            return
        if bytes_data is not None and self.receive_now(bytes_data):
            return
        self._inbox.append((text_data, bytes_data))
        self._draining = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._inbox:
                text_data, bytes_data = self._inbox.popleft()
                await self.receive(text_data=text_data, bytes_data=bytes_data)
        except Exception:
            # Under the ASGI path this would end the consumer; here, close the socket the same way.
            logger.exception("handling a frame of %s failed", self.scope.get("path", "?"))
            self._inbox.clear()
            await self.close(code=1011)
        finally:
            self._draining = None
