"""`GET /mcp`: the stream of server-sent notifications of a handshake-era session.

The client must accept `text/event-stream` (406) and name its session (400 without, 404 once it is
unknown, ended or another token's). `Last-Event-ID` resumes after that event: what the session missed
meanwhile, on this worker or another, is replayed from the event log first. A newer GET of the same
session takes over from an older one (which ends), so each notification goes out on one stream only.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

from lensrelay.access.auth import Access
from lensrelay.docstore.store import get_store
from mcp_tools.models import McpSession
from mcp_tools.notifications.events import stream_claim
from mcp_tools.notifications.hub import StreamBody, stream_hub
from mcp_tools.transport.exchange import sse_response
from mcp_tools.transport.handshake import request_session
from mcp_tools.transport.headers import json_response, parse_accept
from mcp_tools.transport.jsonrpc import INVALID_REQUEST, RpcError, error_response

LAST_EVENT_ID = "Last-Event-ID"


def _refuse(status: int, message: str) -> HttpResponseBase:
    return json_response(error_response(None, RpcError(INVALID_REQUEST, message)), status=status)


def parse_last_event_id(value: str | None) -> int | RpcError | None:
    """The event number a client resumes after; None when it does not resume."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if not value.isascii() or not value.isdigit() or len(value) > 18:
        return RpcError(
            INVALID_REQUEST, f"{LAST_EVENT_ID} {value[:40]!r} is not an event id this server sent."
        )
    return int(value)


async def listen(request: HttpRequest, *, access: Access) -> HttpResponseBase:
    if not parse_accept(request.headers.get("Accept")).sse:
        return _refuse(406, "Not Acceptable: the notification stream is text/event-stream; accept it.")
    resume = parse_last_event_id(request.headers.get(LAST_EVENT_ID))
    if isinstance(resume, RpcError):
        return json_response(error_response(None, resume), status=400)
    session = await request_session(request, access=access, message=None)
    if not isinstance(session, McpSession):
        return session
    claim = await sync_to_async(stream_claim)(session_id=session.id)
    # An id past the last event (another server's, say) resumes from now: nothing is skipped either way.
    cursor = claim.last_seq if resume is None else min(resume, claim.last_seq)
    hub = stream_hub(get_store())
    stream = hub.open(session_id=session.id, owner=claim.owner, cursor=cursor)
    retry_ms = int(getattr(settings, "LENSRELAY_MCP_STREAM_RETRY_MS", 1000))
    return sse_response(StreamBody(hub, stream, retry_ms=retry_ms), session_id=session.id)
