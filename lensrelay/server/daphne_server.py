"""daphne's server, HTTP request and WebSocket protocol as the launcher (`lensrelay.server.serve`) runs them.

- `LimitedWebSocketProtocol`: the frame limit is LENSRELAY_MAX_FRAME_BYTES and a message over it is closed
  with 4413 and a reason (plain daphne drops the TCP connection, and y-websocket resends forever); a sync
  socket's handshake is answered as soon as it is read; a close keeps the application's reason; client
  frames are read and written on the fast path of `lensrelay.server.direct`.
- `LeanWebRequest`: no form parsing (daphne never reads it), a lost connection reported straight to the
  handler (`lensrelay.server.disconnect`).
- `LimitedServer`: puts both in place, the direct socket or the disconnect watch in each scope, and starts
  the warm-up and the loop-lag monitor once the loop runs.

Import this module only after daphne's server module (as `daphne.cli` does): that module installs the
asyncio reactor, which the Twisted names used here must find. The private names of daphne, autobahn and
Twisted relied on are checked by tests/lensrelay/server/test_daphne_contract.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from daphne.http_protocol import WebRequest
from daphne.server import Server
from daphne.ws_protocol import WebSocketProtocol
from django.conf import settings
from twisted.internet import reactor

from lensrelay.server.direct import DirectSocket, read_frames, write_now
from lensrelay.server.disconnect import DISCONNECT_WATCH, DisconnectWatch
from lensrelay.server.looplag import start_loop_lag_monitor
from lensrelay.server.warmup import warm_up
from lensrelay.sync.consumer import CLOSE_TOO_LARGE, SyncConsumer
from lensrelay.sync.fastpath import DIRECT_SEND

# A close frame's payload is at most 125 bytes, two of them the code.
MAX_CLOSE_REASON_BYTES = 123

if not hasattr(WebSocketProtocol, "_max_message_size_exceeded"):
    raise RuntimeError("this autobahn has no _max_message_size_exceeded hook: the frame limit cannot be kept")


def accepts_first(path: str) -> bool:
    """Whether a WebSocket to `path` is routed to the sync consumer, which accepts every socket before
    anything else: the launcher answers the handshake of those at once."""
    from lensrelay.routing import websocket_urlpatterns

    path = path.lstrip("/")  # as Channels' URLRouter matches it
    for route in websocket_urlpatterns:
        if route.pattern.match(path):
            return getattr(route.callback, "consumer_class", None) is SyncConsumer
    return False


class LimitedWebSocketProtocol(WebSocketProtocol):  # type: ignore[misc]
    # autobahn formats three values for a debug log line on every read and every write, even with
    # debug logging off: at fifty clients on a document that is most of the cost of a send. These
    # are its methods without that line (and without the octet counters daphne never reads); the
    # client's usual frames are read by lensrelay.server.direct.read_frames.

    def dataReceived(self, data: bytes) -> None:
        read_frames(self, data)  # the common client frame read here, anything else by autobahn

    def sendData(self, data: bytes, sync: bool = False, chopsize: int | None = None) -> None:
        if sync or chopsize or self.send_queue or self.logOctets:
            super().sendData(data, sync, chopsize)  # queued or chopped sends keep their order
        else:
            write_now(self.transport, data)

    # Set by the consumer once it reads this socket's frames directly (lensrelay.server.direct).
    direct_receiver: Callable[[bytes | None, str | None], None] | None = None
    # Whether the handshake was answered in onConnect, before the application started.
    accepted_early = False

    def onConnect(self, request: Any) -> Any:
        handshake = super().onConnect(request)  # starts the application, sends it websocket.connect
        if self.root_path == "" and accepts_first(self.path.decode("ascii")):
            # The sync consumer accepts every socket before it looks at anything else (its refusals
            # are close codes after the handshake): answering now, with the same response, spares
            # the handshake the wait for the application to start. The client's first frames queue
            # behind websocket.connect as before.
            self.accepted_early = True
            self.serverAccept()
        return handshake

    def serverAccept(self, subprotocol: str | None = None) -> None:
        if self.accepted_early and not hasattr(self, "handshake_deferred"):
            return  # a websocket.accept after the early one changes nothing
        super().serverAccept(subprotocol)

    def onMessage(self, payload: bytes, isBinary: bool) -> None:
        receiver = self.direct_receiver
        if receiver is None or self.muted:
            super().onMessage(payload, isBinary)
            return
        self.last_ping = time.time()  # daphne's keepalive reads it, as its own onMessage keeps it
        if isBinary:
            receiver(payload, None)
        else:
            receiver(None, payload.decode("utf8"))

    def handle_reply(self, message: dict[str, Any]) -> None:
        if message.get("type") == "websocket.close" and self.state != self.STATE_CONNECTING:
            # daphne closes without the application's reason; y-websocket clients report it ("closed"
            # event), and a reason such as "document purged" tells the person why editing stopped.
            reason = str(message.get("reason") or "").encode()[:MAX_CLOSE_REASON_BYTES]
            self.sendClose(code=message.get("code") or 1000, reason=reason.decode(errors="ignore") or None)
            return
        super().handle_reply(message)

    def _max_message_size_exceeded(self, msg_size: int, max_msg_size: int, reason: str) -> None:
        # autobahn's hook for a message over the limit, called before its payload is read.
        self.failByDrop = False  # a close frame the client can read, not a cut connection
        self._fail_connection(CLOSE_TOO_LARGE, f"frame too large: the limit is {max_msg_size} bytes")


class LeanWebRequest(WebRequest):  # type: ignore[misc]
    """daphne's HTTP request, minus a parse nobody reads, plus a direct disconnect report."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Twisted parses the Content-Type of every POST (through the email package, ~10 % of an MCP
        # call) to fill `request.args` from form bodies; daphne never reads `args`, it hands the
        # application the raw body and query string.
        kwargs["parsePOSTFormSubmission"] = False
        super().__init__(*args, **kwargs)
        self.disconnect_watch = DisconnectWatch()

    def connectionLost(self, reason: Any) -> None:
        try:
            super().connectionLost(reason)
        finally:
            self.disconnect_watch.connection_lost()


class LimitedServer(Server):  # type: ignore[misc]
    request_class = LeanWebRequest

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        limit = int(settings.LENSRELAY_MAX_FRAME_BYTES)
        kwargs["websocket_max_message_size"] = limit
        kwargs["websocket_max_frame_size"] = limit
        super().__init__(*args, **kwargs)
        self._then_ready: Callable[[], object] | None = getattr(self, "ready_callable", None)
        self.ready_callable = self._ready

    def _ready(self) -> None:
        # Called once run() has built the WebSocket factory, before the reactor starts.
        self.ws_factory.protocol = LimitedWebSocketProtocol
        build = self.http_factory.buildProtocol
        request_class = self.request_class

        def build_protocol(addr: Any) -> Any:
            # daphne's factory sets its own request class on each connection; ours replaces it.
            protocol = build(addr)
            protocol.requestFactory = request_class
            return protocol

        self.http_factory.buildProtocol = build_protocol
        # Not callWhenRunning: Twisted's asyncio reactor runs those before the asyncio loop is
        # running, where create_task has no loop to take (and the warm-up never ran).
        # (zope interface methods are declared without `self`, which mypy reads as the first argument)
        reactor.callLater(0, self._warm_up)  # type: ignore[arg-type]
        if self._then_ready is not None:
            self._then_ready()

    def _warm_up(self) -> None:
        # What a fresh server's first client would otherwise wait for (lensrelay.server.warmup).
        self._warming = asyncio.get_running_loop().create_task(warm_up(self.application))
        start_loop_lag_monitor()

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> Any:
        if scope.get("type") == "websocket":
            # The sync consumer writes its frames straight into the protocol (lensrelay.server.direct).
            scope.setdefault("extensions", {})[DIRECT_SEND] = DirectSocket(protocol)
        elif scope.get("type") == "http" and isinstance(protocol, LeanWebRequest):
            # The lean /mcp handler cancels its work through this instead of a listening task.
            scope.setdefault("extensions", {})[DISCONNECT_WATCH] = protocol.disconnect_watch
        return super().create_application(protocol, scope)
