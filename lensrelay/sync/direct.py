"""Frames written straight into daphne's WebSocket protocol, each broadcast frame encoded once.

Through ASGI every frame sent to every client goes consumer → Channels' send wrappers → daphne's
`handle_reply` → a message dict → autobahn, which builds the WebSocket frame again for each client. With
fifty clients on a document that is fifty times per update. Our launcher (`lensrelay.serve`) puts a
`DirectSocket` for each connection in the scope under `extensions[DIRECT_SEND]`; the consumer writes its
frames through it once the socket is open, and falls back to the ASGI send when there is none (another
ASGI server, Channels' test communicator) or when the socket is not open.

The bytes on the wire are the same either way. Every write happens on the event loop, in the order the
consumer makes them, so frames keep their order whichever path carried them.
"""

from __future__ import annotations

from typing import Any

from autobahn.websocket.protocol import PreparedMessage

DIRECT_SEND = "lensrelay.direct_send"

# The last frame prepared, and autobahn's prepared message for it: a broadcast hands the same bytes
# object to every client one after another, so one entry is enough to encode it once.
_last: tuple[bytes, PreparedMessage] | None = None


class DirectSocket:
    def __init__(self, protocol: Any) -> None:
        self._protocol = protocol

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
