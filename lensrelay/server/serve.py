"""Run Lens Relay under daphne with the settings' frame limit:
`python -m lensrelay.server.serve [daphne options]`.

Plain daphne reads no Django setting for its WebSocket limits and drops any message over 1 MiB by cutting the
TCP connection: y-websocket then reconnects and resends the same update forever. Here daphne's limit is
LENSRELAY_MAX_FRAME_BYTES, and a message over it is closed with 4413 and a reason, which stops the client.
HTTP requests skip Twisted's form parsing (daphne never uses it) and report a lost connection straight to
the handler (`lensrelay.server.disconnect`). A socket the application closes gets its reason too (daphne
sends the code alone), so a client can say why: "document purged", "unknown document".
Its Prometheus metrics go to a directory settled before anything imports prometheus_client
(`lensrelay.server.metricsdir`), shared by the workers given the same one.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from pprint import pformat
from typing import Any

APPLICATION = "lensrelay.asgi:application"
# A close frame's payload is at most 125 bytes, two of them the code.
MAX_CLOSE_REASON_BYTES = 123


def accepts_first(path: str) -> bool:
    """Whether a WebSocket to `path` is routed to the sync consumer, which accepts every socket before
    anything else: the launcher answers the handshake of those at once."""
    from lensrelay.routing import websocket_urlpatterns
    from lensrelay.sync.consumer import SyncConsumer

    path = path.lstrip("/")  # as Channels' URLRouter matches it
    for route in websocket_urlpatterns:
        if route.pattern.match(path):
            return getattr(route.callback, "consumer_class", None) is SyncConsumer
    return False


def main(argv: Sequence[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lensrelay.settings")
    from lensrelay.server.metricsdir import prepare_metrics_dir

    metrics_dir = prepare_metrics_dir()
    try:
        _serve(argv)
    finally:
        metrics_dir.finish()


def _serve(argv: Sequence[str] | None) -> None:
    import django

    django.setup()
    from daphne.cli import CommandLineInterface

    args = list(sys.argv[1:] if argv is None else argv)
    if any(arg.startswith(("--websocket-max-message-size", "--websocket-max-frame-size")) for arg in args):
        sys.exit(
            "lensrelay.server.serve: the WebSocket limits come from LENSRELAY_MAX_FRAME_BYTES;"
            " set that instead."
        )
    from lensrelay.server.beside import start_derive_beside
    from lensrelay.server.collector import collector_tune
    from lensrelay.server.switching import switch_interval_tune

    cli = CommandLineInterface()
    cli.server_class = _limited_server_class()
    importlib.import_module(APPLICATION.split(":")[0])
    collector_tune()
    switch_interval_tune()
    # Backlinks, search rows and vectors are made there, off this process's live path.
    beside = start_derive_beside()
    try:
        cli.run([*args, APPLICATION])
    finally:
        if beside is not None:
            beside.stop()


def _limited_server_class() -> type:
    from daphne.http_protocol import WebRequest
    from daphne.server import Server
    from daphne.ws_protocol import WebSocketProtocol
    from django.conf import settings
    from twisted.internet import reactor

    from lensrelay.server.direct import DirectSocket, read_frames, write_now
    from lensrelay.server.disconnect import DISCONNECT_WATCH, DisconnectWatch
    from lensrelay.server.looplag import start_loop_lag_monitor
    from lensrelay.server.warmup import warm_up
    from lensrelay.sync.consumer import CLOSE_TOO_LARGE
    from lensrelay.sync.fastpath import DIRECT_SEND

    _lazy_handshake_log()
    limit = int(settings.LENSRELAY_MAX_FRAME_BYTES)
    if not hasattr(WebSocketProtocol, "_max_message_size_exceeded"):
        raise RuntimeError(
            "this autobahn has no _max_message_size_exceeded hook: the frame limit cannot be kept"
        )

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
                self.sendClose(
                    code=message.get("code") or 1000, reason=reason.decode(errors="ignore") or None
                )
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
            kwargs["websocket_max_message_size"] = limit
            kwargs["websocket_max_frame_size"] = limit
            super().__init__(*args, **kwargs)
            then: Callable[[], object] | None = getattr(self, "ready_callable", None)

            def ready() -> None:
                # Called once run() has built the WebSocket factory, before the reactor starts.
                self.ws_factory.protocol = LimitedWebSocketProtocol
                build = self.http_factory.buildProtocol

                def build_protocol(addr: Any) -> Any:
                    # daphne's factory sets its own request class on each connection; ours replaces it.
                    protocol = build(addr)
                    protocol.requestFactory = self.request_class
                    return protocol

                self.http_factory.buildProtocol = build_protocol
                # Not callWhenRunning: Twisted's asyncio reactor runs those before the asyncio loop is
                # running, where create_task has no loop to take (and the warm-up never ran).
                # (zope interface methods are declared without `self`, which mypy reads as the first argument)
                reactor.callLater(0, self._warm_up)  # type: ignore[arg-type]
                if then is not None:
                    then()

            self.ready_callable = ready

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

    return LimitedServer


class LazyPformat:
    """`pprint.pformat(value)`, computed only if a log line is actually formatted."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return pformat(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _lazy_handshake_log() -> None:
    # autobahn's `_connectionMade` pretty-prints its ~30 options for a debug line on every connection,
    # logged or not: ~0.25 ms of every WebSocket connect, before the handshake is answered. Twisted's
    # logger formats its fields only for an observer that wants the event, so a lazy value costs nothing
    # when debug logging is off and gives the same text when it is on.
    # Timings.__str__ is the module's one other use that must return the text itself.
    from autobahn.websocket import protocol

    if protocol.pformat is pformat:
        setattr(protocol.Timings, "__str__", _timings_text)  # noqa: B010  (mypy: no method assignment)
        setattr(protocol, "pformat", LazyPformat)  # noqa: B010


def _timings_text(timings: Any) -> str:
    return pformat(timings._timings)


if __name__ == "__main__":
    main()
