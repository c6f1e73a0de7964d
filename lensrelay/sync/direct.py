"""Frames written straight into daphne's WebSocket protocol, each broadcast frame encoded once.

Through ASGI every frame sent to every client goes consumer → Channels' send wrappers → daphne's
`handle_reply` → a message dict → autobahn, which builds the WebSocket frame again for each client. With
fifty clients on a document that is fifty times per update. Our launcher (`lensrelay.serve`) puts a
`DirectSocket` for each connection in the scope under `extensions[DIRECT_SEND]`; the consumer writes its
frames through it once the socket is open, and falls back to the ASGI send when there is none (another
ASGI server, Channels' test communicator) or when the socket is not open.

The bytes on the wire are the same either way. Every write happens on the event loop, in the order the
consumer makes them, so frames keep their order whichever path carried them.

The other way, the consumer can take the client's frames straight from the protocol once it is connected
(`receive_directly`): each frame is handled as soon as autobahn has read it, an ordinary update without any
task switch, instead of travelling as a message dict through daphne's application queue to the
consumer's task on a later turn of the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autobahn.websocket.protocol import PreparedMessage
from twisted.internet import tcp

DIRECT_SEND = "lensrelay.direct_send"

# The last frame prepared, and autobahn's prepared message for it: a broadcast hands the same bytes
# object to every client one after another, so one entry is enough to encode it once.
_last: tuple[bytes, PreparedMessage] | None = None


# Called with each frame the client sends: (bytes, None) for a binary frame, (None, text) for text.
Receiver = Callable[[bytes | None, str | None], None]


class DirectSocket:
    def __init__(self, protocol: Any) -> None:
        self._protocol = protocol

    def receive_directly(self, receiver: Receiver) -> bool:
        """Have the protocol hand the client's frames to `receiver` as they are read, not through
        daphne's application queue (a message dict, a queue and a task wake-up per frame).

        False, and nothing changes, while that queue still holds messages: the caller reads those first
        and asks again, so no frame overtakes one received before it. Connects and disconnects still
        come through the queue.
        """
        protocol = self._protocol
        queue = getattr(protocol, "application_queue", None)
        if queue is None or not queue.empty() or not hasattr(protocol, "direct_receiver"):
            return False
        if protocol.state != protocol.STATE_OPEN:
            return False
        protocol.direct_receiver = receiver
        return True

    def stop_receiving(self) -> None:
        self._protocol.direct_receiver = None

    def send(self, frame: bytes) -> bool:
        """Write one binary frame now; False if the socket is not open (use the ASGI send instead)."""
        global _last
        protocol = self._protocol
        if protocol.state != protocol.STATE_OPEN:
            return False
        if _last is None or _last[0] is not frame:
            # Binary, unmasked (server to client), compressible if the connection negotiated it.
            _last = (frame, PreparedMessage(frame, True, False, False))
        protocol.sendPreparedMessage(_last[1])
        return True


def write_now(transport: Any, data: bytes) -> None:
    """`transport.write(data)`, but sent on the socket at once when nothing is waiting to go before it.

    Twisted's write only buffers: it registers the socket for writability and sends on the next turn of
    the loop, then unregisters it, which is two epoll changes and a loop turn per frame and client. On a
    plain TCP connection whose buffer is empty the bytes can go now, in the same order. What the kernel
    does not take at once (a slow reader) is left to Twisted's buffer, which keeps the order after it
    and pauses the registered producer (daphne's HTTP channel) if it fills; bytes the kernel took need
    neither.
    """
    if (
        type(transport) is not tcp.Server
        or transport.TLS
        or not transport.connected
        or transport.disconnecting
        or transport._writeDisconnected
        or transport.dataBuffer
        or transport._tempDataBuffer
    ):
        transport.write(data)
        return
    try:
        sent = transport.socket.send(data)
    except (BlockingIOError, InterruptedError):
        sent = 0
    except OSError:
        sent = 0  # a broken connection: Twisted's own write finds out and closes it as usual
    if sent < len(data):
        transport.write(data[sent:])
