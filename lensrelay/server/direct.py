"""Frames written straight into daphne's WebSocket protocol, each broadcast frame encoded once.

Through ASGI every frame sent to every client goes consumer → Channels' send wrappers → daphne's
`handle_reply` → a message dict → autobahn, which builds the WebSocket frame again for each client. With
fifty clients on a document that is fifty times per update. Our launcher (`lensrelay.server.serve`) puts a
`DirectSocket` for each connection in the scope under `extensions[DIRECT_SEND]`; the consumer writes its
frames through it once the socket is open, and falls back to the ASGI send when there is none (another
ASGI server, Channels' test communicator) or when the socket is not open.

The bytes on the wire are the same either way. Every write happens on the event loop, in the order the
consumer makes them, so frames keep their order whichever path carried them.

The other way, the consumer can take the client's frames straight from the protocol once it is connected
(`receive_directly`): each frame is handled as soon as autobahn has read it, an ordinary update without any
task switch, instead of travelling as a message dict through daphne's application queue to the
consumer's task on a later turn of the loop.

And before that, `read_frames` reads the common client frame itself (one whole, unfragmented, masked binary
frame, as y-websocket sends every message) instead of autobahn's general parser, which for every frame
builds a header object, a native masker, per-frame and per-message lists and a "message" event nobody
listens to. Anything else is left to autobahn, from the first byte it does not take, so it sees the
stream exactly as before from a frame boundary on.
"""

from __future__ import annotations

from typing import Any

from autobahn.websocket.protocol import PreparedMessage
from autobahn.websocket.xormasker import create_xor_masker
from twisted.internet import tcp

from lensrelay.sync.fastpath import Receiver

# The last frame prepared, and autobahn's prepared message for it: a broadcast hands the same bytes
# object to every client one after another, so one entry is enough to encode it once.
_last: tuple[bytes, PreparedMessage] | None = None


class DirectSocket:
    """The launcher's `lensrelay.sync.fastpath.DirectSocket` for one daphne WebSocket protocol."""

    def __init__(self, protocol: Any) -> None:
        self._protocol = protocol

    @property
    def accepted(self) -> bool:
        """Whether the launcher has already answered this socket's handshake (lensrelay.server.serve)."""
        return bool(getattr(self._protocol, "accepted_early", False))

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


# FIN set, no RSV bits (no extension in use), opcode 2: a whole binary message in one frame.
_FIN_BINARY = 0x82
_MASKED = 0x80
# Payloads up to this size are unmasked with one integer XOR; autobahn's native masker costs more to set
# up than that for a small frame and less for a big one.
_SMALL_PAYLOAD = 2048


def _unmask(mask: bytes, payload: bytes) -> bytes:
    n = len(payload)
    if n > _SMALL_PAYLOAD:
        unmasked: bytes = create_xor_masker(mask, n).process(payload)
        return unmasked
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "little")
    return (int.from_bytes(payload, "little") ^ key).to_bytes(n, "little")


def _between_frames(protocol: Any) -> bool:
    """Whether autobahn is open and holds nothing of a frame or message, and whether nothing it would
    do for a plain binary frame beyond handing it to onMessage (compression, logging, timings, listeners
    of the "message" event) is in use."""
    listeners = protocol._listeners
    return bool(
        protocol.state == protocol.STATE_OPEN
        and not protocol.data
        and protocol.current_frame is None
        and not protocol.inside_message
        and not protocol.failedByMe
        and protocol._perMessageCompress is None
        and protocol.applyMask
        and not protocol.logFrames
        and not protocol.trackedTimings
        and not (listeners and listeners.get("message"))
    )


def read_frames(protocol: Any, data: bytes) -> None:
    """Bytes received by a server-side autobahn WebSocket protocol (`dataReceived`).

    Whole masked binary frames with nothing of an earlier frame pending are unmasked here and handed to
    `protocol.onMessage(payload, True)`, one after the other, as autobahn would. From the first byte
    that is anything else (a text, control or fragmented frame, a frame not yet complete, one over the
    size limits, an unmasked or 64-bit-length one, a broken header) the rest goes to autobahn's own
    `_dataReceived`, which parses, refuses or closes exactly as it always did.
    """
    pos = 0
    end = len(data)
    while pos + 2 <= end and _between_frames(protocol):
        if data[pos] != _FIN_BINARY:
            break
        second = data[pos + 1]
        if not second & _MASKED:
            break
        length = second & 0x7F
        if length < 126:
            start = pos + 6
        elif length == 126:
            if pos + 4 > end:
                break
            length = (data[pos + 2] << 8) | data[pos + 3]
            if length < 126:
                break  # not the shortest encoding: autobahn refuses it
            start = pos + 8
        else:
            break  # 64-bit lengths (64 KiB and more) are rare: autobahn's parser takes them
        frame_limit = protocol.maxFramePayloadSize
        message_limit = protocol.maxMessagePayloadSize
        if 0 < frame_limit < length or 0 < message_limit < length:
            break  # autobahn closes it (lensrelay.server.daphne_server's hook: 4413)
        stop = start + length
        if stop > end:
            break  # the frame is not all here yet: autobahn buffers it
        payload = _unmask(data[start - 4 : start], data[start:stop])
        pos = stop
        if protocol.autoPingTimeoutCall and protocol.autoPingRestartOnAnyTraffic:
            protocol._cancelAutoPingTimeoutCall()  # as autobahn does for any data frame
        protocol.onMessage(payload, True)
    if pos < end:
        protocol._dataReceived(data[pos:] if pos else data)
