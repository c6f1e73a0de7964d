"""The names of daphne, Twisted and autobahn that lensrelay/server/ relies on, and their signatures.

The launcher (`lensrelay.server.serve`) subclasses daphne's server, HTTP request and WebSocket protocol and
overrides or calls methods of autobahn and Twisted that are not public API; the direct frames
(`lensrelay.server.direct`) read protocol and transport state directly. pyproject.toml pins the versions
this was written against. When one of these names is gone or its signature changed, this test says which,
before a client meets a server that cuts connections or silently drops the frame limit. Update the fast
path and this list together; plain `daphne lensrelay.asgi:application` needs none of them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

import pytest
from autobahn.websocket import protocol as autobahn_protocol
from autobahn.websocket import xormasker
from daphne import cli, http_protocol, server, ws_protocol
from twisted.internet import tcp
from twisted.web import http

WS = ws_protocol.WebSocketProtocol  # daphne's, over autobahn's WebSocketServerProtocol
HTTP_REQUEST = http_protocol.WebRequest  # daphne's, over twisted.web.http.Request

# Methods we override, call or hook: (class, name, the parameter names after self, in order).
METHODS: list[tuple[type, str, list[str]]] = [
    # autobahn's hook for a message over the size limit (the 4413 close) and its way to close.
    (WS, "_max_message_size_exceeded", ["msg_size", "max_msg_size", "reason"]),
    (WS, "_fail_connection", ["code", "reason"]),
    # read_frames hands anything it does not take to autobahn's parser, and restarts the ping timer.
    (WS, "_dataReceived", ["data"]),
    (WS, "_cancelAutoPingTimeoutCall", []),
    (WS, "dataReceived", ["data"]),
    (WS, "sendData", ["data", "sync", "chopsize"]),
    (WS, "sendPreparedMessage", ["preparedMsg"]),
    (WS, "onMessage", ["payload", "isBinary"]),
    (WS, "onConnect", ["request"]),
    (WS, "serverAccept", ["subprotocol"]),
    (HTTP_REQUEST, "__init__", ["args", "kwargs"]),
    (HTTP_REQUEST, "connectionLost", ["reason"]),
    (http.Request, "__init__", ["channel", "queued", "parsePOSTFormSubmission"]),
    (server.Server, "create_application", ["protocol", "scope"]),
    (cli.CommandLineInterface, "run", ["args"]),
]

# Keyword arguments of daphne's Server we pass (the frame limit) or read back (ready_callable).
SERVER_KWARGS = ["websocket_max_message_size", "websocket_max_frame_size", "ready_callable"]

# State read or set on instances: (class, attribute). Found as a class attribute, one of autobahn's
# CONFIG_ATTRS (copied from the factory when a connection is made), or `self.<name>` assigned in the source
# of the class or one of its bases.
INSTANCE_ATTRIBUTES: list[tuple[type, str]] = [
    # autobahn's protocol, read by lensrelay.server.direct before it takes a frame itself.
    *(
        (WS, name)
        for name in [
            "state",
            "STATE_OPEN",
            "data",
            "current_frame",
            "inside_message",
            "failedByMe",
            "failByDrop",
            "_perMessageCompress",
            "applyMask",
            "logFrames",
            "logOctets",
            "trackedTimings",
            "_listeners",
            "maxFramePayloadSize",
            "maxMessagePayloadSize",
            "autoPingTimeoutCall",
            "autoPingRestartOnAnyTraffic",
            "send_queue",
            "transport",
        ]
    ),
    # daphne's protocol: the early accept, the direct receive, the keepalive.
    *(
        (WS, name)
        for name in ["root_path", "path", "muted", "last_ping", "handshake_deferred", "application_queue"]
    ),
    # daphne's server: the factories whose protocol and request class the launcher replaces.
    (server.Server, "application"),  # handed to the warm-up
    (server.Server, "ws_factory"),
    (server.Server, "http_factory"),
    (http.HTTPChannel, "requestFactory"),
    # Twisted's TCP transport, written to directly by write_now when nothing waits before the bytes.
    *(
        (tcp.Server, name)
        for name in [
            "TLS",
            "connected",
            "disconnecting",
            "_writeDisconnected",
            "dataBuffer",
            "_tempDataBuffer",
            "socket",
        ]
    ),
]


def _parameters(function: Callable[..., object]) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


def _assigned(cls: type, name: str) -> bool:
    if hasattr(cls, name) or name in getattr(cls, "CONFIG_ATTRS", ()):
        return True  # autobahn copies each of its CONFIG_ATTRS from the factory onto the protocol
    pattern = re.compile(rf"self\.{re.escape(name)}\s*(:[^=\n]*)?=[^=]")
    for base in cls.__mro__:
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        if pattern.search(source):
            return True
    return False


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@pytest.mark.parametrize(
    ("cls", "name", "expected"), METHODS, ids=[f"{c.__name__}.{n}" for c, n, _ in METHODS]
)
def test_methods_the_fast_paths_override_or_call(cls: type, name: str, expected: list[str]) -> None:
    method = getattr(cls, name, None)
    assert callable(method), (
        f"{_where(cls)}.{name} is gone: lensrelay/server/ overrides or calls it (see "
        "tests/lensrelay/server/test_daphne_contract.py); adapt the fast path before widening the pin"
    )
    found = _parameters(method)
    assert found == expected, (
        f"{_where(cls)}.{name} now takes ({', '.join(found)}), lensrelay/server/ was written for "
        f"({', '.join(expected)}): check its use before widening the pin in pyproject.toml"
    )


def test_server_keyword_arguments() -> None:
    found = _parameters(server.Server.__init__)
    missing = [name for name in SERVER_KWARGS if name not in found]
    assert not missing, f"daphne's Server no longer takes {missing}: the launcher passes or reads them"


@pytest.mark.parametrize(
    ("cls", "name"), INSTANCE_ATTRIBUTES, ids=[f"{c.__name__}.{n}" for c, n in INSTANCE_ATTRIBUTES]
)
def test_state_the_fast_paths_read(cls: type, name: str) -> None:
    assert _assigned(cls, name), (
        f"{_where(cls)} no longer has `{name}` (neither a class attribute nor set as self.{name}): "
        "lensrelay/server/ reads or sets it"
    )


def test_autobahn_module_names() -> None:
    # The launcher makes autobahn's per-connection debug line lazy by swapping the module's pformat and
    # Timings.__str__ (which reads Timings._timings).
    assert autobahn_protocol.__dict__.get("pformat") is not None, "autobahn's protocol module has no pformat"
    assert "pformat(" in inspect.getsource(autobahn_protocol.WebSocketProtocol._connectionMade), (
        "autobahn's _connectionMade no longer formats its options with pformat: the lazy log patch is moot"
    )
    assert _assigned(autobahn_protocol.Timings, "_timings"), "autobahn's Timings keeps no _timings"
    assert _parameters(autobahn_protocol.PreparedMessage) == [
        "payload",
        "isBinary",
        "applyMask",
        "doNotCompress",
    ]
    assert _parameters(xormasker.create_xor_masker) == ["mask", "length"]


def test_the_launcher_builds_its_server_class() -> None:
    # Everything above, used for real: the launcher's classes subclass daphne's without an error.
    from lensrelay.server.serve import _limited_server_class

    limited = _limited_server_class()
    assert issubclass(limited, server.Server)
