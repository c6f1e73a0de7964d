"""`/mcp` from the ASGI server straight to `mcp_tools.endpoint.handle`, past Django's middleware and routing.

None of the middleware does anything for `/mcp` (no cookies, CSRF, sessions or templates: the endpoint
checks its own Origin, token and limits), yet the chain, URL resolving, django-ninja's dispatch, the
request signals and two thread hops (`request_started` receivers and closing the response, each on a
fresh thread per request) were a good part of every call's cost (see bench/RESULTS.md). Django's request
object and response classes are still used, and a request whose client goes away is cancelled as Django's
handler does.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponseBase

from lensrelay.server.disconnect import DISCONNECT_WATCH, DisconnectWatch
from mcp_tools.endpoint import answer

PATH = "/mcp"


class McpHandler(ASGIHandler):
    def __init__(self) -> None:
        # Deliberately not ASGIHandler.__init__: that loads the middleware chain this handler skips.
        self._middleware_chain = None

    async def read_body(self, receive: Any) -> io.BytesIO:
        """The body in memory, never spooled to a file: Django's spool writes a body over 2.5 MB to disk on
        the event loop's thread (tens of milliseconds every live client waits for). Daphne has already
        buffered the whole body, so keeping it costs nothing more; past the endpoint's limit (which then
        answers 413) the rest is read and dropped."""
        keep = int(settings.LENSRELAY_MCP_MAX_BODY_BYTES) + 1
        body = io.BytesIO()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise RequestAborted()
            chunk = message.get("body", b"")
            if body.tell() < keep:
                body.write(chunk[: keep - body.tell()])
            if not message.get("more_body", False):
                body.seek(0)
                return body

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            body = await self.read_body(receive)
        except RequestAborted:
            return
        with body:
            request, refusal = self.create_request(scope, body)
            if request is None:
                assert refusal is not None  # Django's own answer to a request it cannot build
                await self.send_response(refusal, send)
                return
            watch: DisconnectWatch | None = scope.get("extensions", {}).get(DISCONNECT_WATCH)
            if watch is not None:
                await self._answer_watched(request, send, watch)
                return
            answering = asyncio.ensure_future(self._answer(request, send))
            listening = asyncio.ensure_future(self.listen_for_disconnect(receive))
            await asyncio.wait((answering, listening), return_when=asyncio.FIRST_COMPLETED)
            listening.cancel()
            if not answering.done():  # the client went away: stop working for it
                answering.cancel()
            with contextlib.suppress(asyncio.CancelledError, RequestAborted):
                await listening
            with contextlib.suppress(asyncio.CancelledError):
                await answering

    async def _answer_watched(self, request: HttpRequest, send: Any, watch: DisconnectWatch) -> None:
        """Answer in this task; the server's watch cancels it if the client goes away meanwhile (two
        tasks fewer per request than listening on `receive()`)."""
        task = asyncio.current_task()
        assert task is not None
        if not watch.on_lost(task.cancel):
            return  # gone before we started
        try:
            await self._answer(request, send)
        except asyncio.CancelledError:
            if not watch.lost:
                raise  # not the client: the server is shutting down
        finally:
            watch.clear()

    async def _answer(self, request: HttpRequest, send: Any) -> None:
        response = await self.run_get_response(request)
        try:
            await self.send_response(response, send)
        finally:
            _close(response)

    async def run_get_response(self, request: HttpRequest) -> HttpResponseBase:
        try:
            return await answer(request)
        except Exception as exc:  # the same 500 (and log entry) Django's own handler would give
            return await sync_to_async(response_for_exception)(request, exc)


def _close(response: HttpResponseBase) -> None:
    """`response.close()` without its `request_finished` signal, inline: the closers are JSON bodies and
    our own SSE generators (nothing that blocks), and the signal's receivers (closing this thread's
    database connections and caches, resetting the URLconf) have nothing to do on the event loop's
    thread, where /mcp uses neither, yet cost ~2 % of the loop per call (bench/RESULTS.md)."""
    closers: list[Callable[[], object]] = getattr(response, "_resource_closers", [])
    for closer in closers:
        with contextlib.suppress(Exception):  # as Django's close() does
            closer()
    closers.clear()
    response.closed = True


def mcp_first(django_application: Any) -> Any:
    """An ASGI application that serves `/mcp` with `McpHandler` and everything else with Django."""
    mcp = McpHandler()

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == PATH:
            await mcp(scope, receive, send)
        else:
            await django_application(scope, receive, send)

    return application
