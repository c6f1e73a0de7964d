"""The stateless protocol era (2026-07-28) over streamable HTTP.

No handshake and no session: every request carries its protocol version, client capabilities and client
info in `params._meta`, and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers must agree
with the body. Protocol errors come with the HTTP status the version prescribes (400, or 404 for an unknown
method). The server cannot send requests to the client, and logs only at the level a request asks for.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponseBase

from lensrelay.access.auth import Access
from mcp_tools.callers.sessions import LOG_LEVELS
from mcp_tools.transport import dispatch, subscribing
from mcp_tools.transport.context import CallScope, address_of
from mcp_tools.transport.exchange import Outbox, answer
from mcp_tools.transport.headers import (
    METHOD,
    NAME,
    PROTOCOL_VERSION,
    Accepts,
    decode_header_value,
    empty_response,
    json_response,
)
from mcp_tools.transport.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    Invalid,
    Notification,
    Reply,
    Request,
    RpcError,
    classify,
    error_response,
)
from mcp_tools.transport.versions import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    HANDSHAKE_VERSIONS,
    LOG_LEVEL_META_KEY,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
    SUPPORTED_VERSIONS,
)

# The HTTP status each protocol error is answered with in this era (others: 200).
ERROR_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    -32021: 400,  # missing required client capability
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
# Methods whose name (or URI) the Mcp-Name header repeats.
NAME_PARAMS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The Tasks extension (SEP-2663): routes a task's requests to whoever holds it.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def status_of(message: dict[str, Any]) -> int:
    error = message.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return ERROR_STATUS.get(code, 200) if isinstance(code, int) else 200


def unsupported_version(requested: Any) -> RpcError:
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: {requested}",
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


def _reject(error: RpcError, request_id: Any = None) -> HttpResponseBase:
    message = error_response(request_id, error)
    return json_response(message, status=status_of(message))


def is_stateless_body(body: Any) -> bool:
    """A header-less request whose `_meta` names a version past the handshake era belongs to this era."""
    if not isinstance(body, dict):
        return False
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    return isinstance(version, str) and version not in HANDSHAKE_VERSIONS


async def post(request: HttpRequest, *, access: Access, accepts: Accepts, body: Any) -> HttpResponseBase:
    if isinstance(body, list):
        return _reject(
            RpcError(INVALID_REQUEST, "JSON-RPC batches are not supported in protocol 2026-07-28.")
        )
    message = classify(body)
    if isinstance(message, Invalid):
        return _reject(RpcError(INVALID_REQUEST, message.reason), message.id)
    if isinstance(message, Reply):
        return _reject(
            RpcError(
                INVALID_REQUEST,
                "The server sends no requests in protocol 2026-07-28; there is nothing to answer.",
            )
        )
    header_version = request.headers.get(PROTOCOL_VERSION)
    if isinstance(message, Notification):
        # Nothing to act on without a session (cancelling is closing the response stream); acknowledge.
        if header_version not in MODERN_VERSIONS:
            return _reject(unsupported_version(header_version))
        return empty_response(202)
    meta = _envelope(request, message)
    if isinstance(meta, RpcError):
        return _reject(meta, message.id)
    outbox = Outbox(streaming=accepts.sse)
    log_level = meta.get(LOG_LEVEL_META_KEY)
    progress_token = meta.get("progressToken")
    client_info = meta.get(CLIENT_INFO_META_KEY)
    scope = CallScope(
        era="stateless",
        protocol_version=meta[PROTOCOL_VERSION_META_KEY],
        access=access,
        request_id=message.id,
        outbox=outbox,
        client_info=dict(client_info) if isinstance(client_info, dict) else {},
        client_capabilities=dict(meta[CLIENT_CAPABILITIES_META_KEY]),
        log_level=log_level if log_level in LOG_LEVELS else None,
        progress_token=progress_token if isinstance(progress_token, str | int) else None,
        public_base=address_of(request),
    )
    if message.method == subscribing.METHOD:
        if not accepts.sse:
            return _reject(
                RpcError(
                    INVALID_REQUEST, "subscriptions/listen answers with a stream: accept text/event-stream."
                ),
                message.id,
            )
        opened = await subscribing.listen(scope, message.params or {})
        return _reject(opened, message.id) if isinstance(opened, RpcError) else opened
    return await answer(
        dispatch.run_request(scope, message), outbox=outbox, accepts=accepts, status_of=status_of
    )


def _envelope(request: HttpRequest, message: Request) -> dict[str, Any] | RpcError:
    """The request's `_meta` once it passes this era's checks, in the order the SDKs apply them."""
    params = message.params or {}
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_META_KEY!r} and "
            f"{CLIENT_CAPABILITIES_META_KEY!r} (protocol 2026-07-28 has no initialize handshake).",
        )
    missing = [key for key in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if key not in meta]
    if missing:
        return RpcError(INVALID_PARAMS, f"params._meta lacks {', '.join(missing)}.")
    version = meta[PROTOCOL_VERSION_META_KEY]
    if request.headers.get(PROTOCOL_VERSION) != version:
        return RpcError(
            HEADER_MISMATCH, f"The {PROTOCOL_VERSION} header does not match params._meta's protocol version."
        )
    if request.headers.get(METHOD) != message.method:
        return RpcError(HEADER_MISMATCH, f"The {METHOD} header does not match the request's method.")
    name_key = NAME_PARAMS.get(message.method)
    named = params.get(name_key) if name_key is not None else None
    if named is not None and decode_header_value(request.headers.get(NAME)) != named:
        return RpcError(HEADER_MISMATCH, f"The {NAME} header does not match params.{name_key}.")
    if not isinstance(version, str):
        return RpcError(INVALID_PARAMS, "The protocol version in params._meta must be a string.")
    if version not in MODERN_VERSIONS:
        return unsupported_version(version)
    if not isinstance(meta[CLIENT_CAPABILITIES_META_KEY], dict):
        return RpcError(INVALID_PARAMS, f"{CLIENT_CAPABILITIES_META_KEY} must be an object.")
    return meta
