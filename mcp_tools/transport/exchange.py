"""Answering one posted request: a JSON body, or an SSE stream when the server has more to say first.

A handler that finishes without emitting anything is answered with `application/json` (the plain and
cheap case, and the only one where the HTTP status can still reflect a protocol error). As soon as it
emits a notification (progress, a log message) or a request to the client (sampling, elicitation) and
the client accepts `text/event-stream`, the response commits to SSE: those messages first, the response
last. A handler that runs quietly for long also commits to SSE, so keep-alive comments can flow.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any

from django.http import HttpResponseBase, StreamingHttpResponse

from mcp_tools.notifications.hub import sse_frame
from mcp_tools.transport.headers import SESSION_ID, SSE_TYPE, Accepts, json_response

# How long a quiet handler may run before the response commits to SSE (when the client accepts it).
COMMIT_AFTER_SECONDS = 10.0
PING_EVERY_SECONDS = 15.0
PING = b": ping\n\n"


class Outbox:
    """Messages for the client that precede one request's response on its SSE stream."""

    def __init__(self, *, streaming: bool) -> None:
        # False when the client only accepts JSON: there is nowhere to put anything but the response.
        self.streaming = streaming
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        # Called on each message while `answer` waits to choose between JSON and SSE.
        self.on_message: Callable[[], object] | None = None

    def send(self, message: dict[str, Any]) -> bool:
        """Queue a message; False if it was dropped because this response cannot stream."""
        if not self.streaming:
            return False
        self.queue.put_nowait(message)
        if self.on_message is not None:
            self.on_message()
        return True


def sse_event(message: dict[str, Any]) -> bytes:
    """A response's event: a notification stream's frame without an id (there is no resuming a response)."""
    return sse_frame(None, message)


def sse_response(body: AsyncIterable[bytes], *, session_id: str | None) -> StreamingHttpResponse:
    response = StreamingHttpResponse(body, content_type=SSE_TYPE)
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"  # nginx would otherwise hold events back
    if session_id:
        response[SESSION_ID] = session_id
    return response


async def answer(
    run: Awaitable[dict[str, Any]],
    *,
    outbox: Outbox,
    accepts: Accepts,
    status_of: Callable[[dict[str, Any]], int],
    session_id: str | None = None,
    commit_after: float = COMMIT_AFTER_SECONDS,
) -> HttpResponseBase:
    """The HTTP response for one request; `run` yields its JSON-RPC response message and never raises."""
    if not outbox.streaming:
        # Nothing can precede the response: run the handler in this task (one task fewer).
        message = await run
        return json_response(message, status=status_of(message), session_id=session_id)

    # The handler runs in a task of its own, since a response that commits to SSE goes out while it still
    # runs. Waiting for whichever comes first (its end, its first message, `commit_after`) takes one plain
    # future and callbacks rather than a task parked on the queue and `asyncio.wait`: this is every call.
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(run)
    woken: asyncio.Future[None] = loop.create_future()

    def wake(*_: object) -> None:
        if not woken.done():
            woken.set_result(None)

    task.add_done_callback(wake)
    outbox.on_message = wake
    timer = loop.call_later(commit_after, wake)
    try:
        await woken
    except BaseException:
        task.cancel()
        raise
    finally:
        timer.cancel()
        task.remove_done_callback(wake)
        outbox.on_message = None
    if task.done() and outbox.queue.empty():
        message = task.result()
        if accepts.json:
            return json_response(message, status=status_of(message), session_id=session_id)
        return sse_response(_single(message), session_id=session_id)
    first: asyncio.Future[dict[str, Any]] = asyncio.ensure_future(outbox.queue.get())
    return sse_response(EventStream(task, first, outbox), session_id=session_id)


class EventStream:
    """The body of a committed SSE response. Django calls `close()` once the response is over (from a
    worker thread); a handler that is somehow still running then is cancelled."""

    def __init__(
        self, task: asyncio.Future[dict[str, Any]], first: asyncio.Future[dict[str, Any]], outbox: Outbox
    ) -> None:
        self._task = task
        self._loop = asyncio.get_running_loop()
        self._events = _stream(task, first, outbox)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._events

    def close(self) -> None:
        if not self._task.done():
            self._loop.call_soon_threadsafe(self._task.cancel)


async def _single(message: dict[str, Any]) -> AsyncIterator[bytes]:
    yield sse_event(message)


async def _stream(
    task: asyncio.Future[dict[str, Any]], pending: asyncio.Future[dict[str, Any]], outbox: Outbox
) -> AsyncIterator[bytes]:
    try:
        while True:
            done, _ = await asyncio.wait(
                {task, pending}, timeout=PING_EVERY_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            if pending in done:
                yield sse_event(pending.result())
                pending = asyncio.ensure_future(outbox.queue.get())
            elif task in done:
                while not outbox.queue.empty():
                    yield sse_event(outbox.queue.get_nowait())
                yield sse_event(task.result())
                return
            else:
                yield PING
    finally:
        # The client went away (or we are done): stop waiting, and stop the handler if it still runs.
        pending.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
