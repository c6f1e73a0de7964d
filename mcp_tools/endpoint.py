"""`/mcp`: the MCP streamable HTTP endpoint (POST, GET and DELETE), whichever way a request arrives.

The ASGI server hands `/mcp` straight to `answer` (`mcp_tools.lean`); Django's URLconf mounts it too
(`mcp_tools.api`). Nothing here imports django-ninja: a fresh server answers its first MCP request without
loading it (issue 11, start-up).

Checks that hold in every protocol era run here, in this order: a foreign `Origin` is refused (403), the
bearer token is required (401), then the `MCP-Protocol-Version` header picks the era — a handshake version
(or none) goes to `transport.handshake`, 2026-07-28 to `transport.stateless`, anything else is refused
(400, -32022). POST bodies must be acceptable (406), JSON (415), small enough (413) and parse (-32700).
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.http import HttpRequest, HttpResponseBase

from lensrelay.access.auth import Access
from lensrelay.access.bearer import bearer_token
from lensrelay.access.limits import read_body
from lensrelay.access.oauth import resource_metadata_url
from mcp_tools.callers import memory
from mcp_tools.transport import handshake, listening, stateless
from mcp_tools.transport.headers import (
    PROTOCOL_VERSION,
    bearer_challenge,
    content_type_is_json,
    empty_response,
    json_response,
    origin_allowed,
    parse_accept,
)
from mcp_tools.transport.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, RpcError, decode_json, error_response
from mcp_tools.transport.versions import HANDSHAKE_VERSIONS, SUPPORTED_VERSIONS

logger = logging.getLogger(__name__)

DATABASE_UNAVAILABLE = (
    "Service unavailable: the database cannot be reached right now. Retry in a few seconds."
)


async def answer(request: HttpRequest) -> HttpResponseBase:
    """One `/mcp` request, whichever way it arrived (the lean ASGI path or Django's URL routing)."""
    try:
        return await handle(request)
    except DatabaseError as exc:
        # Sessions, tokens and suggestions live in the database: while it is away, say so in JSON-RPC
        # (clients retry), never with an HTML error page. The next request reconnects.
        logger.warning("MCP request refused, the database is unavailable: %s", exc)
        # The lean /mcp path runs no request signals, so nothing else replaces a connection the outage
        # broke: drop it here (on the thread that owns it), and the next request connects afresh.
        await sync_to_async(close_old_connections)()
        response = json_response(
            error_response(None, RpcError(INTERNAL_ERROR, DATABASE_UNAVAILABLE)), status=503
        )
        response["Retry-After"] = "2"
        return response


def _problem(status: int, message: str, **headers: str) -> HttpResponseBase:
    response = json_response(error_response(None, RpcError(INVALID_REQUEST, message)), status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


async def authenticate(request: HttpRequest) -> tuple[Access | None, bool]:
    """The caller's access, and whether a credential was offered at all (for the 401 challenge).

    Without an Authorization header the test configuration may grant LENSRELAY_MCP_ANONYMOUS_ROLE; a
    header that is present but wrong is refused even then.
    """
    if "Authorization" in request.headers:
        raw = bearer_token(request)
        return (await memory.token_access_now(raw) if raw and raw.strip() else None), True
    role = getattr(settings, "LENSRELAY_MCP_ANONYMOUS_ROLE", "")
    if role:
        return Access(name="anonymous", role=role, folder_ids=None), False
    return None, False


async def handle(request: HttpRequest) -> HttpResponseBase:
    if not origin_allowed(request):
        return _problem(403, f"Forbidden: origin {request.headers.get('Origin')!r} is not allowed.")
    await memory.refresh()
    access, offered = await authenticate(request)
    if access is None:
        message = (
            "Unauthorized: the bearer token is unknown, expired or revoked."
            if offered
            else "Unauthorized: send Authorization: Bearer <token> (an API token from the admin), or connect "
            "through OAuth: the WWW-Authenticate header names this server's resource metadata."
        )
        challenge = bearer_challenge(invalid=offered, resource_metadata=resource_metadata_url(request))
        return _problem(401, message, WWW_Authenticate=challenge)

    version = request.headers.get(PROTOCOL_VERSION)
    version = version.strip() if version is not None else None
    if request.method == "POST":
        return await _post(request, access=access, version=version)
    if version is not None and version not in HANDSHAKE_VERSIONS:
        # 2026-07-28 is POST only.
        return empty_response(405, allow="POST")
    if request.method == "DELETE":
        return await handshake.delete(request, access=access)
    if request.method == "GET":
        return await listening.listen(request, access=access)
    return empty_response(405, allow="GET, POST, DELETE")


async def _post(request: HttpRequest, *, access: Access, version: str | None) -> HttpResponseBase:
    accepts = parse_accept(request.headers.get("Accept"))
    if not accepts.anything:
        return _problem(406, "Not Acceptable: accept application/json or text/event-stream (ideally both).")
    if not content_type_is_json(request):
        return _problem(415, "Unsupported Media Type: post JSON-RPC as application/json.")
    body = _read_body(request)
    if body is None:
        limit = settings.LENSRELAY_MCP_MAX_BODY_BYTES
        return _problem(413, f"Payload Too Large: the body exceeds {limit} bytes.")
    try:
        decoded = decode_json(body)
    except RpcError as exc:
        return json_response(error_response(None, exc), status=400)
    if version is not None and version not in SUPPORTED_VERSIONS:
        request_id = decoded.get("id") if isinstance(decoded, dict) else None
        error = stateless.unsupported_version(version)
        return json_response(error_response(_id_or_none(request_id), error), status=400)
    if (version is not None and version not in HANDSHAKE_VERSIONS) or (
        version is None and stateless.is_stateless_body(decoded)
    ):
        return await stateless.post(request, access=access, accepts=accepts, body=decoded)
    return await handshake.post(request, access=access, accepts=accepts, body=decoded)


def _read_body(request: HttpRequest) -> bytes | None:
    return read_body(request, limit=int(settings.LENSRELAY_MCP_MAX_BODY_BYTES))


def _id_or_none(value: Any) -> str | int | None:
    return (
        value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) else None
    )
