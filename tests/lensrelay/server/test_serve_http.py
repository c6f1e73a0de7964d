"""daphne's HTTP requests under our launcher (lensrelay.server.serve): no form parsing, lost connections
reported."""

from __future__ import annotations

import asyncio
from typing import Any

from daphne.http_protocol import HTTPFactory
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from lensrelay.server.disconnect import DISCONNECT_WATCH, DisconnectWatch
from lensrelay.server.serve import _limited_server_class


class Application:
    """An ASGI application that records its scope and works until its watch cancels it."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []
        self.cancelled = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        self.bodies.append((await receive())["body"])
        watch: DisconnectWatch = scope["extensions"][DISCONNECT_WATCH]
        task = asyncio.current_task()
        assert task is not None
        assert watch.on_lost(task.cancel)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


def connect(application: Application) -> tuple[Any, Any, StringTransport]:
    server_class = _limited_server_class()
    server = server_class(application, endpoints=["tcp:port=0"])
    server.connections = {}  # what run() sets up
    channel = HTTPFactory(server).buildProtocol(None)
    channel.requestFactory = server_class.request_class  # what our ready() arranges for every connection
    transport = StringTransport()
    channel.makeConnection(transport)
    return server, channel, transport


FORM_POST = (
    b"POST /mcp HTTP/1.1\r\nHost: relay\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"Content-Length: 7\r\n\r\nkey=val"
)


async def test_a_post_body_is_passed_on_unparsed_and_a_lost_connection_cancels_the_work() -> None:
    application = Application()
    server, channel, _transport = connect(application)
    channel.dataReceived(FORM_POST)
    await asyncio.sleep(0.01)  # the application starts
    assert len(application.scopes) == 1
    request = next(iter(server.connections))
    assert request.args == {}  # Twisted did not parse the form (daphne never reads it)
    assert application.bodies == [b"key=val"]  # the body reaches the application intact
    assert not application.cancelled.is_set()

    channel.connectionLost(Failure(ConnectionDone()))
    await asyncio.wait_for(application.cancelled.wait(), 1)
    assert request.disconnect_watch.lost


async def test_a_watch_lost_before_the_handler_registers_refuses_the_callback() -> None:
    watch = DisconnectWatch()
    called: list[str] = []
    watch.connection_lost()
    assert not watch.on_lost(lambda: called.append("late"))
    assert called == []


async def test_a_cleared_watch_calls_nothing() -> None:
    watch = DisconnectWatch()
    called: list[str] = []
    assert watch.on_lost(lambda: called.append("lost"))
    watch.clear()
    watch.connection_lost()
    assert called == [] and watch.lost
