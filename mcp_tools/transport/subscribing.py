"""`subscriptions/listen` (2026-07-28): a stateless client's stream of change notifications.

The request's response is a text/event-stream that stays open. The first message acknowledges the subset
of the client's filter the server honours: `resourcesListChanged`, and of `resourceSubscriptions` the
`lens://` notes the token may read (lists of tools and prompts never change here, so those are not
honoured). Then come `notifications/resources/updated` and `notifications/resources/list_changed`, each
carrying the listen request's id as `_meta["io.modelcontextprotocol/subscriptionId"]`, and nothing else.

Underneath it is a handshake-era subscription: the stream is a session of its own (`listen-…`, ended
when the stream closes), with the same subscriptions, event log, scope and coalescing as a session's GET
stream, so both eras hear the same edits the same way. There is no replay: a client that loses the stream
listens again and refetches.
"""

from __future__ import annotations

import secrets
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpResponseBase
from django.utils import timezone

from lensrelay.docstore.store import get_store
from mcp_tools.models import McpSession, McpSubscription, McpTask, McpTaskWatch
from mcp_tools.notifications.events import stream_claim
from mcp_tools.notifications.hub import StreamBody, stream_hub
from mcp_tools.notifications.subscriptions import max_subscriptions, subscription_add
from mcp_tools.resources.documents import DOCUMENTS
from mcp_tools.tasks.records import task_find
from mcp_tools.tasks.wire import TASK_NOTIFICATION
from mcp_tools.transport import tasking
from mcp_tools.transport.context import CallScope
from mcp_tools.transport.exchange import sse_response
from mcp_tools.transport.jsonrpc import INVALID_PARAMS, RpcError

METHOD = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
# What a listen stream may carry, by the filter field that asks for it.
DELIVERED = {
    "notifications/resources/updated": "resourceSubscriptions",
    "notifications/resources/list_changed": "resourcesListChanged",
    TASK_NOTIFICATION: "taskIds",
}


def _strings(notifications: dict[str, Any], field: str, what: str) -> RpcError | None:
    values = notifications.get(field, [])
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        return RpcError(INVALID_PARAMS, f"`{field}` must be a list of {what}s.")
    if len(values) > max_subscriptions():
        return RpcError(INVALID_PARAMS, f"At most {max_subscriptions()} {what}s can be listened to at once.")
    return None


def requested_filter(scope: CallScope, params: dict[str, Any]) -> dict[str, Any] | RpcError:
    notifications = params.get("notifications")
    if not isinstance(notifications, dict):
        return RpcError(
            INVALID_PARAMS, "subscriptions/listen needs `notifications`, the filter to listen to."
        )
    if "taskIds" in notifications and not tasking.declared(scope):
        # The extension requires it: a client that did not declare it is told, not silently ignored.
        return tasking.missing_extension(METHOD + " with taskIds")
    return (
        _strings(notifications, "resourceSubscriptions", "resource URI")
        or _strings(notifications, "taskIds", "task id")
        or notifications
    )


def _open_session(scope: CallScope) -> str:
    session_id = f"listen-{secrets.token_hex(16)}"
    McpSession.objects.create(
        id=session_id,
        token_id=scope.access.token_id,
        protocol_version=scope.protocol_version,
        client_name=scope.client_name,
        client_info=scope.client_info,
    )
    return session_id


def _own_tasks(task_ids: list[str], scope: CallScope) -> dict[str, McpTask]:
    """The named tasks this token may see, by id, in one thread hop rather than one per id."""
    found = {task_id: task_find(task_id=task_id, access=scope.access) for task_id in dict.fromkeys(task_ids)}
    return {task_id: task for task_id, task in found.items() if task is not None}


def _watch_tasks(session_id: str, tasks: list[McpTask]) -> None:
    McpTaskWatch.objects.bulk_create([McpTaskWatch(session_id=session_id, task=task) for task in tasks])


def _end_session(session_id: str) -> None:
    McpSubscription.objects.filter(session_id=session_id).delete()
    McpTaskWatch.objects.filter(session_id=session_id).delete()
    McpSession.objects.filter(pk=session_id, ended_at__isnull=True).update(ended_at=timezone.now())


async def listen(scope: CallScope, params: dict[str, Any]) -> HttpResponseBase | RpcError:
    """The listen stream's response, or the protocol error that refuses it (nothing is opened then)."""
    wanted = requested_filter(scope, params)
    if isinstance(wanted, RpcError):
        return wanted
    ctx = scope.tool_context()
    documents: dict[str, tuple[str, str]] = {}  # requested URI -> (canonical URI, doc_id)
    for uri in dict.fromkeys(wanted.get("resourceSubscriptions", [])):
        found = await DOCUMENTS.canonical_of(ctx, uri)
        if found is not None:  # a note the token may read; others are left out of the acknowledgment
            documents[uri] = (found.uri, found.doc_id)
    tasks = await sync_to_async(_own_tasks)(wanted.get("taskIds", []), scope)
    honoured: dict[str, Any] = {}
    if wanted.get("resourcesListChanged") is True:
        honoured["resourcesListChanged"] = True
    if documents:
        honoured["resourceSubscriptions"] = list(documents)
    if tasks:
        honoured["taskIds"] = list(tasks)
    session_id = await sync_to_async(_open_session)(scope)
    for canonical, doc_id in documents.values():
        await sync_to_async(subscription_add)(session_id=session_id, uri=canonical, doc_id=doc_id)
    await sync_to_async(_watch_tasks)(session_id, list(tasks.values()))
    claim = await sync_to_async(stream_claim)(session_id=session_id)
    meta = {SUBSCRIPTION_ID_META_KEY: scope.request_id}
    ack = {"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": {"notifications": honoured, "_meta": meta}}

    def shape(message: dict[str, Any]) -> dict[str, Any] | None:
        asked_by = DELIVERED.get(str(message.get("method")))
        if asked_by is None or asked_by not in honoured:
            return None  # never a type the client did not ask for
        params = dict(message.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), **meta}
        return {**message, "params": params}

    async def ended() -> None:
        await sync_to_async(_end_session)(session_id)

    hub = stream_hub(get_store())
    stream = hub.open(session_id=session_id, owner=claim.owner, cursor=claim.last_seq)
    retry_ms = int(getattr(settings, "LENSRELAY_MCP_STREAM_RETRY_MS", 1000))
    body = StreamBody(hub, stream, retry_ms=retry_ms, first=[ack], shape=shape, ended=ended)
    return sse_response(body, session_id=None)
