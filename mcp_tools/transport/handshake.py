"""The handshake protocol era (2025-03-26, 2025-06-18, 2025-11-25) over streamable HTTP.

`initialize` opens a session whose id comes back in `Mcp-Session-Id`; every later POST and the DELETE
that ends it must carry that id (400 without it, 404 once it is unknown, ended, idle or another token's).
Notifications and replies are acknowledged with 202. JSON-RPC batches are accepted in 2025-03-26 sessions
only.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.http import HttpRequest, HttpResponseBase

from lensrelay.access.auth import Access
from mcp_tools.callers import sessions
from mcp_tools.models import McpSession
from mcp_tools.transport import dispatch, outbound
from mcp_tools.transport.context import CallScope, address_of
from mcp_tools.transport.exchange import Outbox, answer, sse_event, sse_response
from mcp_tools.transport.headers import SESSION_ID, Accepts, empty_response, json_response
from mcp_tools.transport.jsonrpc import (
    INVALID_REQUEST,
    Invalid,
    Message,
    Notification,
    Reply,
    Request,
    RequestId,
    RpcError,
    classify,
    error_response,
    result_response,
)
from mcp_tools.transport.versions import (
    BATCH_VERSIONS,
    INSTRUCTIONS,
    LATEST_HANDSHAKE_VERSION,
    negotiate,
    server_info,
)

# Not a JSON-RPC standard code; the value the MCP SDKs use for a request the client cancelled.
REQUEST_CANCELLED = -32800


class _Running:
    """A request being answered, in whichever task runs it, so `notifications/cancelled` can stop it."""

    __slots__ = ("by_client", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.by_client = False

    def cancel_by_client(self) -> None:
        if not self.by_client:
            self.by_client = True
            self.task.cancel()


# Requests running in this process, so `notifications/cancelled` can stop them.
_IN_FLIGHT: dict[tuple[str, RequestId], _Running] = {}


async def post(request: HttpRequest, *, access: Access, accepts: Accepts, body: Any) -> HttpResponseBase:
    if isinstance(body, list):
        return await _batch(request, access=access, accepts=accepts, items=body)
    message = classify(body)
    if isinstance(message, Request) and message.method == "initialize":
        return await _initialize(access=access, accepts=accepts, request=message, http=request)
    if isinstance(message, Invalid):
        return _fault(RpcError(INVALID_REQUEST, message.reason), request_id=message.id)
    session = await request_session(request, access=access, message=message)
    if not isinstance(session, McpSession):
        return session
    if isinstance(message, Request):
        return await _answer_request(
            session=session, access=access, accepts=accepts, request=message, http=request
        )
    await _absorb(session, message)
    return empty_response(202, session_id=session.id)


async def delete(request: HttpRequest, *, access: Access) -> HttpResponseBase:
    session = await request_session(request, access=access, message=None)
    if not isinstance(session, McpSession):
        return session
    await sessions.asession_end(session_id=session.id)
    return empty_response(200)


# ------------------------------------------------------------------------------------------- pieces


def _fault(error: RpcError, *, status: int = 400, request_id: RequestId | None = None) -> HttpResponseBase:
    return json_response(error_response(request_id, error), status=status)


async def request_session(
    request: HttpRequest, *, access: Access, message: Message | None
) -> McpSession | HttpResponseBase:
    request_id = message.id if isinstance(message, Request) else None
    session_id = request.headers.get(SESSION_ID, "").strip()
    if not session_id:
        return _fault(
            RpcError(
                INVALID_REQUEST, f"Bad Request: the {SESSION_ID} header is missing; send initialize first."
            ),
            request_id=request_id,
        )
    session = await sessions.asession_get_kept(session_id=session_id, token_id=access.token_id)
    if session is None:
        return _fault(
            RpcError(
                INVALID_REQUEST, "Session not found: it ended or expired. Send initialize to start a new one."
            ),
            status=404,
            request_id=request_id,
        )
    return session


async def _initialize(
    *, access: Access, accepts: Accepts, request: Request, http: HttpRequest | None = None
) -> HttpResponseBase:
    # Older clients (and curl scripts) leave out capabilities: an empty set means none.
    params = {"capabilities": {}, **(request.params or {})}
    try:
        dispatch.validate_params("initialize", LATEST_HANDSHAKE_VERSION, params)
    except RpcError as exc:
        return _single(error_response(request.id, exc), accepts=accepts, session_id=None)
    version = negotiate(params.get("protocolVersion"))
    session = await sessions.asession_create(
        token_id=access.token_id,
        protocol_version=version,
        client_info=dict(params.get("clientInfo") or {}),
        client_capabilities=dict(params.get("capabilities") or {}),
    )
    result = {
        "protocolVersion": version,
        "capabilities": dispatch.server_capabilities(stateless=False),
        "serverInfo": server_info(version, request=http),
        "instructions": INSTRUCTIONS,
    }
    return _single(result_response(request.id, result), accepts=accepts, session_id=session.id)


def _single(
    message: dict[str, Any] | list[dict[str, Any]], *, accepts: Accepts, session_id: str | None
) -> HttpResponseBase:
    if accepts.json:
        return json_response(message, session_id=session_id)
    messages = message if isinstance(message, list) else [message]

    async def events() -> Any:
        for item in messages:
            yield sse_event(item)

    return sse_response(events(), session_id=session_id)


def _scope(
    session: McpSession, *, access: Access, request: Request, outbox: Outbox, http: HttpRequest
) -> CallScope:
    meta = (request.params or {}).get("_meta")
    progress_token = meta.get("progressToken") if isinstance(meta, dict) else None
    return CallScope(
        era="handshake",
        protocol_version=session.protocol_version,
        access=access,
        request_id=request.id,
        outbox=outbox,
        session=session,
        client_info=dict(session.client_info or {}),
        client_capabilities=dict(session.client_capabilities or {}),
        log_level=session.log_level or None,
        progress_token=progress_token if isinstance(progress_token, str | int) else None,
        public_base=address_of(http),
    )


async def _cancellable(session: McpSession, request: Request, scope: CallScope) -> dict[str, Any]:
    """Run the request in the current task (no task of its own, this is every call). A cancellation
    the client asked for becomes its error response; any other (the client went away, the server
    stops) goes on up."""
    key = (session.id, request.id)
    current = asyncio.current_task()
    assert current is not None
    running = _Running(current)
    _IN_FLIGHT[key] = running
    try:
        return await dispatch.run_request(scope, request)
    except asyncio.CancelledError:
        if not running.by_client or current.uncancel() > 0:
            raise  # not (only) the client's notification: nobody is left to answer
        return error_response(request.id, RpcError(REQUEST_CANCELLED, "Request cancelled by the client."))
    finally:
        if _IN_FLIGHT.get(key) is running:
            del _IN_FLIGHT[key]


async def _answer_request(
    *, session: McpSession, access: Access, accepts: Accepts, request: Request, http: HttpRequest
) -> HttpResponseBase:
    outbox = Outbox(streaming=accepts.sse)
    scope = _scope(session, access=access, request=request, outbox=outbox, http=http)
    return await answer(
        _cancellable(session, request, scope),
        outbox=outbox,
        accepts=accepts,
        status_of=lambda _message: 200,
        session_id=session.id,
    )


async def _absorb(session: McpSession, message: Notification | Reply) -> None:
    """Act on a posted notification or reply (nothing to answer)."""
    if isinstance(message, Reply):
        await outbound.deliver_reply(request_id=message.id, session_id=session.id, message=message.body)
        return
    if message.method == "notifications/cancelled":
        request_id = (message.params or {}).get("requestId")
        if isinstance(request_id, str | int):
            running = _IN_FLIGHT.get((session.id, request_id))
            if running is not None:
                running.cancel_by_client()


async def _batch(
    request: HttpRequest, *, access: Access, accepts: Accepts, items: list[Any]
) -> HttpResponseBase:
    if not items:
        return _fault(RpcError(INVALID_REQUEST, "An empty batch is not a valid JSON-RPC request."))
    session = await request_session(request, access=access, message=None)
    if not isinstance(session, McpSession):
        return session
    if session.protocol_version not in BATCH_VERSIONS:
        return _fault(
            RpcError(
                INVALID_REQUEST,
                f"Batches are not supported in protocol {session.protocol_version} (only in 2025-03-26);"
                " send one message per request.",
            )
        )
    replies: list[dict[str, Any]] = []
    for item in items:
        message = classify(item)
        if isinstance(message, Invalid):
            replies.append(error_response(message.id, RpcError(INVALID_REQUEST, message.reason)))
        elif isinstance(message, Request) and message.method == "initialize":
            replies.append(
                error_response(message.id, RpcError(INVALID_REQUEST, "initialize cannot be batched."))
            )
        elif isinstance(message, Request):
            # One response per request and no stream to interleave notifications into.
            scope = _scope(
                session, access=access, request=message, outbox=Outbox(streaming=False), http=request
            )
            replies.append(await _cancellable(session, message, scope))
        else:
            await _absorb(session, message)
    if not replies:
        return empty_response(202, session_id=session.id)
    return _single(replies, accepts=accepts, session_id=session.id)
