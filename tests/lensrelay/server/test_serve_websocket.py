"""WebSocket connects under our launcher (lensrelay.server.serve): a sync socket's handshake is answered as
soon as it is read, and autobahn's per-connection debug line is formatted only when it is logged."""

from __future__ import annotations

import asyncio
import pprint
from typing import Any

import pytest
from autobahn.websocket import protocol
from daphne.http_protocol import HTTPFactory
from daphne.ws_protocol import WebSocketFactory
from twisted.internet.testing import StringTransport

import lensrelay.server.serve
from lensrelay.server.daphne_server import accepts_first
from lensrelay.server.serve import _limited_server_class


class Application:
    """Records the messages it receives; accepts like Channels' consumer would under any ASGI server."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.messages.append(await receive())
        await send({"type": "websocket.accept"})
        self.messages.append(await receive())


def handshake(path: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


def open_socket(application: Application, path: str) -> StringTransport:
    server_class = _limited_server_class()
    server = server_class(application, endpoints=["tcp:port=0"])
    server.connections = {}  # what run() sets up, with the two factories
    server.http_factory = HTTPFactory(server)
    server.ws_factory = WebSocketFactory(server, server="daphne")
    server.ws_factory.setProtocolOptions(allowNullOrigin=True, openHandshakeTimeout=0)
    server.ready_callable()  # our launcher's protocol and request classes
    channel = server.http_factory.buildProtocol(None)
    transport = StringTransport()
    channel.makeConnection(transport)
    channel.dataReceived(handshake(path))
    return transport


# A masked binary frame (mask 01 02 03 04): sync step 1 with an empty state vector, 00 00 00.
STEP1 = bytes([0x82, 0x83, 1, 2, 3, 4, 1, 2, 3])


async def test_a_sync_socket_is_answered_before_the_application_runs() -> None:
    application = Application()
    transport = open_socket(application, "/d/doc-1/ws/doc-1?token=abc")
    # Answered while the handshake was read: the application has not run yet.
    assert transport.value().startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
    assert application.messages == []
    transport.clear()
    transport.protocol.dataReceived(STEP1)  # the client's first frame, before the application starts
    await asyncio.sleep(0.05)
    # The application gets the connect first, then the frame; its own accept changes nothing.
    assert application.messages == [
        {"type": "websocket.connect"},
        {"type": "websocket.receive", "bytes": b"\x00\x00\x00"},
    ]
    assert transport.value() == b""


async def test_other_sockets_wait_for_the_applications_accept() -> None:
    application = Application()
    transport = open_socket(application, "/elsewhere")
    assert transport.value() == b""
    await asyncio.sleep(0.05)
    assert application.messages[0] == {"type": "websocket.connect"}
    assert transport.value().startswith(b"HTTP/1.1 101 Switching Protocols\r\n")


def test_accepts_first_matches_the_sync_routes_only() -> None:
    assert accepts_first("/d/doc-1/ws/doc-1") and accepts_first("/ws/doc-1")
    assert not accepts_first("/d/doc-1/ws/doc-1/extra") and not accepts_first("/elsewhere")


def test_the_options_are_pretty_printed_only_when_the_debug_line_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _limited_server_class()
    printed: list[object] = []

    def counted(value: object) -> str:
        printed.append(value)
        return pprint.pformat(value)

    monkeypatch.setattr(lensrelay.server.serve, "pformat", counted)
    options = [("autoPingInterval", 0, "WebSocketServerFactory")]
    value = protocol.pformat(options)  # what _connectionMade hands its debug line
    assert printed == []
    # What the log line's "\n{attrs}" gives once an observer formats it: the same text as before.
    assert f"\n{value}" == "\n" + pprint.pformat(options)
    assert printed == [options]


def test_timings_still_print_as_text() -> None:
    _limited_server_class()
    timings = protocol.Timings()
    timings.track("onOpen")
    assert isinstance(str(timings), str) and "onOpen" in str(timings)


class Closing:
    """Accepts, then closes with a code and a reason, as the sync consumer does when it refuses."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": 4404, "reason": self.reason})


@pytest.mark.parametrize(
    ("reason", "sent"),
    [("document purged", b"document purged"), ("é" * 100, "é".encode() * 61)],  # at most 123 bytes, whole
)
async def test_the_close_reason_reaches_the_client(reason: str, sent: bytes) -> None:
    transport = open_socket(Closing(reason), "/elsewhere")
    await asyncio.sleep(0.05)
    frame = transport.value().split(b"\r\n\r\n", 1)[1]
    # An unmasked close frame: opcode 8, the payload's length, the code (4404), the reason in UTF-8.
    assert frame == bytes([0x88, 2 + len(sent)]) + (4404).to_bytes(2, "big") + sent
