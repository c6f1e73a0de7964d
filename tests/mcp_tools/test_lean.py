"""The lean /mcp handler's own pieces (mcp_tools.lean)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.core.exceptions import RequestAborted
from django.core.signals import request_finished
from django.http import HttpResponse, StreamingHttpResponse

from lensrelay.server.disconnect import DISCONNECT_WATCH, DisconnectWatch
from mcp_tools import lean
from mcp_tools.lean import McpHandler, _close


class Closable:
    def __init__(self) -> None:
        self.closed = 0

    def __iter__(self) -> Any:
        yield b"x"

    def close(self) -> None:
        self.closed += 1


def test_closing_runs_the_bodys_closers_once_and_sends_no_request_signal() -> None:
    body = Closable()
    response = StreamingHttpResponse(body)
    finished: list[object] = []

    def receiver(**kwargs: Any) -> None:
        finished.append(kwargs.get("sender"))

    request_finished.connect(receiver)
    try:
        _close(response)
        _close(response)
    finally:
        request_finished.disconnect(receiver)
    assert body.closed == 1
    assert response.closed
    assert finished == []


def test_a_failing_closer_does_not_stop_the_others() -> None:
    response = HttpResponse(b"{}")
    calls: list[str] = []

    def broken() -> None:
        calls.append("broken")
        raise RuntimeError("closing failed")

    response._resource_closers.extend([broken, lambda: calls.append("fine")])  # type: ignore[attr-defined]
    _close(response)
    assert calls == ["broken", "fine"]


# ------------------------------------------------------------ answering in the request's own task


def http_scope(watch: DisconnectWatch) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"content-type", b"application/json")],
        "query_string": b"",
        "extensions": {DISCONNECT_WATCH: watch},
    }


async def receive_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"{}", "more_body": False}


class Recorder:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


async def test_a_lost_connection_cancels_the_work_in_the_requests_own_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()
    tasks: list[asyncio.Task[Any] | None] = []

    async def slow(request: Any) -> HttpResponse:
        tasks.append(asyncio.current_task())
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return HttpResponse(b"{}")

    monkeypatch.setattr(lean, "answer", slow)
    watch, sent = DisconnectWatch(), Recorder()
    handling = asyncio.ensure_future(McpHandler()(http_scope(watch), receive_body, sent))
    await asyncio.wait_for(started.wait(), 1)
    assert tasks == [handling]  # no task of its own: the answer runs in the request's task
    watch.connection_lost()  # what daphne reports when the client goes away
    await asyncio.wait_for(handling, 1)  # ends quietly
    assert cancelled.is_set()
    assert sent.sent == []


async def test_a_request_answered_in_its_own_task_sends_the_response_and_releases_the_watch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def quick(request: Any) -> HttpResponse:
        return HttpResponse(b'{"ok":1}', content_type="application/json")

    monkeypatch.setattr(lean, "answer", quick)
    watch, sent = DisconnectWatch(), Recorder()
    await McpHandler()(http_scope(watch), receive_body, sent)
    assert [m["type"] for m in sent.sent] == ["http.response.start", "http.response.body"]
    assert sent.sent[1]["body"] == b'{"ok":1}'
    watch.connection_lost()  # later: concerns nobody
    assert watch.lost


async def test_a_streamed_answer_is_cancelled_and_closed_when_the_connection_is_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closed, streaming = asyncio.Event(), asyncio.Event()

    async def events() -> Any:
        yield b"event: message\ndata: {}\n\n"
        streaming.set()
        await asyncio.sleep(60)
        yield b"never"

    class Body:
        def __init__(self) -> None:
            self._events = events()

        def __aiter__(self) -> Any:
            return self._events

        def close(self) -> None:
            closed.set()

    async def streamed(request: Any) -> StreamingHttpResponse:
        return StreamingHttpResponse(Body(), content_type="text/event-stream")

    monkeypatch.setattr(lean, "answer", streamed)
    watch, sent = DisconnectWatch(), Recorder()
    handling = asyncio.ensure_future(McpHandler()(http_scope(watch), receive_body, sent))
    await asyncio.wait_for(streaming.wait(), 1)
    watch.connection_lost()
    await asyncio.wait_for(handling, 1)
    assert closed.is_set()  # the SSE body's closer ran (it cancels the handler still working)
    assert [m.get("body") for m in sent.sent[1:]] == [b"event: message\ndata: {}\n\n"]


async def test_a_connection_lost_before_answering_starts_is_not_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []

    async def counted(request: Any) -> HttpResponse:
        calls.append(request)
        return HttpResponse(b"{}")

    monkeypatch.setattr(lean, "answer", counted)
    watch, sent = DisconnectWatch(), Recorder()
    watch.connection_lost()
    await McpHandler()(http_scope(watch), receive_body, sent)
    assert calls == [] and sent.sent == []


async def test_a_server_shutdown_still_cancels_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    started = asyncio.Event()

    async def slow(request: Any) -> HttpResponse:
        started.set()
        await asyncio.sleep(60)
        return HttpResponse(b"{}")

    monkeypatch.setattr(lean, "answer", slow)
    handling = asyncio.ensure_future(McpHandler()(http_scope(DisconnectWatch()), receive_body, Recorder()))
    await asyncio.wait_for(started.wait(), 1)
    handling.cancel()  # daphne killing its applications, not a client going away
    with pytest.raises(asyncio.CancelledError):
        await handling


def chunks_then_end(*chunks: bytes) -> Any:
    messages = [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
    messages.append({"type": "http.request", "body": b"", "more_body": False})

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    return receive


async def test_a_body_over_djangos_spool_size_stays_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Django's spool writes a body over 2.5 MB to a file, on the event loop's thread."""

    def no_files(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the body was spooled to a file")

    monkeypatch.setattr("tempfile.SpooledTemporaryFile", no_files)
    big = b"x" * (3 * 1024 * 1024)
    body = await McpHandler().read_body(chunks_then_end(big[:65536], big[65536:]))
    assert body.read() == big


async def test_a_body_over_the_limit_is_kept_only_to_one_byte_past_it(settings: Any) -> None:
    """Enough for the endpoint to answer 413; the rest is read and dropped, not held."""
    settings.LENSRELAY_MCP_MAX_BODY_BYTES = 1000
    body = await McpHandler().read_body(chunks_then_end(b"a" * 600, b"b" * 600, b"c" * 5000))
    assert body.read() == b"a" * 600 + b"b" * 401


async def test_a_client_gone_while_sending_its_body_aborts_the_request() -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    with pytest.raises(RequestAborted):
        await McpHandler().read_body(receive)
