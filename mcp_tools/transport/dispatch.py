"""Answering MCP methods, the same way in both protocol eras except where the eras differ.

`run_request` validates a request's params against the `mcp-types` schema of its protocol version (the
common, well-formed ones through `plaincheck`, without importing `mcp_types` for them), calls
the method's handler and wraps the outcome as a JSON-RPC response. Protocol faults are JSON-RPC errors;
tool failures (unknown tool, bad arguments, a tool that raised) are results with `isError: true`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from pydantic import ValidationError

from lensrelay.docstore.acting import acting_as
from lensrelay.observability import metrics
from lensrelay.text.unicode_text import find_nul, find_unencodable
from mcp_tools import prompts
from mcp_tools.callers import sessions
from mcp_tools.notifications.subscriptions import TooManySubscriptions, subscription_add, subscription_remove
from mcp_tools.registry import NO_STRUCTURED_VERSIONS, Tool, ToolError, ToolResult
from mcp_tools.resources import providers
from mcp_tools.resources.documents import DOCUMENTS, document_uri
from mcp_tools.reviewing import app_keys
from mcp_tools.transport import catalog, tasking
from mcp_tools.transport.context import CallScope
from mcp_tools.transport.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    Request,
    RpcError,
    error_response,
    result_response,
    short_validation_message,
)
from mcp_tools.transport.plaincheck import request_params_pass
from mcp_tools.transport.versions import INSTRUCTIONS, SERVER_INFO_META_KEY, SUPPORTED_VERSIONS, server_info

logger = logging.getLogger("mcp_tools")

Handler = Callable[[CallScope, dict[str, Any]], Awaitable[dict[str, Any]]]

# ttlMs for the stateless era's cacheable results: lists that change with a deployment, documents that
# change any second.
CACHE_TTL_MS = {
    "server/discover": 60_000,
    "tools/list": 60_000,
    "prompts/list": 60_000,
    "resources/templates/list": 60_000,
    "resources/list": 0,
    "resources/read": 0,
}


def server_capabilities(*, stateless: bool) -> dict[str, Any]:
    # Handshake-era sessions hear of changes on their GET stream (mcp_tools.notifications), stateless
    # clients on a `subscriptions/listen` stream (mcp_tools.transport.subscribing).
    resources_capability: dict[str, Any] = {"subscribe": True, "listChanged": True}
    capabilities: dict[str, Any] = {
        "tools": {"listChanged": False},
        "resources": resources_capability,
        "logging": {},
    }
    if prompts.offered_prompts():
        capabilities["prompts"] = {"listChanged": False}
        capabilities["completions"] = {}
    if stateless:
        # Defined for 2026-07-28 only (SEP-2663): the handshake era's experimental tasks are another design.
        capabilities["extensions"] = {tasking.EXTENSION: {}}
    return capabilities


# ------------------------------------------------------------------------------------------- handlers


async def ping(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    return {}


async def set_log_level(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    assert scope.session is not None
    level = params["level"]
    await sessions.asession_set_log_level(session_id=scope.session.id, level=level)
    scope.session.log_level = level
    return {}


async def discover(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": server_capabilities(stateless=True),
        "instructions": INSTRUCTIONS,
        # Discovery is where a client learns who answers: its icon too (every other result's identity
        # stays short).
        "_meta": {SERVER_INFO_META_KEY: server_info(scope.protocol_version)},
    }


async def list_tools(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    # Every tool fits on one page; a cursor from another server generation is simply ignored.
    version = scope.protocol_version
    return {"tools": [tool.definition(version) for tool in catalog.tools_for(scope.access)]}


ERROR_PREFIX = "Error: "


def tool_failure(text: str) -> dict[str, Any]:
    """A tool error for the assistant: every one starts the same way, whichever tool or check made it."""
    if not text.startswith(ERROR_PREFIX):
        text = ERROR_PREFIX + text
    return {"content": [{"type": "text", "text": text}], "isError": True}


# A result lists at most this many notes as `resource_link` items (the text names them all).
MAX_RESOURCE_LINKS = 50


def tool_answer(answer: str | ToolResult, *, protocol_version: str) -> dict[str, Any]:
    """A tools/call result: the text always; the data and the notes' links for clients that know them."""
    if isinstance(answer, str):
        return {"content": [{"type": "text", "text": answer}], "isError": False}
    content: list[dict[str, Any]] = [{"type": "text", "text": answer.text}]
    if protocol_version in NO_STRUCTURED_VERSIONS:
        return {"content": content, "isError": False}
    notes = [path for path in dict.fromkeys(answer.links) if path.endswith(".md")]
    for path in notes[:MAX_RESOURCE_LINKS]:
        link = {"type": "resource_link", "uri": document_uri(path), "name": path, "mimeType": "text/markdown"}
        content.append(link)
    result = {"content": content, "structuredContent": answer.structured, "isError": False}
    if answer.meta is not None:
        result["_meta"] = answer.meta
    return result


async def call_tool(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    """A tools/call, counted by tool and outcome (lensrelay_mcp_tool_calls_total) and timed."""
    started = time.perf_counter()
    tool = catalog.find_tool(params["name"])
    # Only names the code registered become label values; anything a caller made up is "unknown".
    label = metrics.MCP_UNKNOWN_TOOL if tool is None else tool.name
    outcome = "internal_error"
    try:
        result = await _call_tool(scope, params, tool)
        outcome = str(result.pop(_OUTCOME, "error" if result.get("isError") else "ok"))
        return result
    except asyncio.CancelledError:
        outcome = "cancelled"
        raise
    finally:
        metrics.mcp_tool_call_observe(tool=label, outcome=outcome, seconds=time.perf_counter() - started)


# A key of `_call_tool`'s result naming an outcome other than "ok"/"error"; removed before it is sent.
_OUTCOME = "_lensrelay_outcome"


async def _call_tool(
    scope: CallScope, params: dict[str, Any], tool: catalog.AnyTool | None
) -> dict[str, Any]:
    name = params["name"]
    arguments = params.get("arguments") or {}
    if tool is None:
        names = ", ".join(t.name for t in catalog.tools_for(scope.access)) or "none"
        return {**tool_failure(f"Unknown tool: {name}. Available tools: {names}."), _OUTCOME: "unknown_tool"}
    if not tool.available_to(scope.access):
        return {
            **tool_failure(
                f"Tool {name} proposes changes, which this token (role {scope.access.role}) may not do. "
                "Ask for a token with the suggest or edit role."
            ),
            _OUTCOME: "forbidden",
        }
    if isinstance(tool, Tool) and tool.app_only:
        # Hiding it from the model is the host's doing; refusing what the model sends anyway is ours.
        key = arguments.get(app_keys.KEY_ARGUMENT) if isinstance(arguments, dict) else None
        spent = await app_keys.aconsume(
            key=key, token_id=scope.access.token_id, session_key=scope.session_key
        )
        if not spent:
            return {**tool_failure(app_keys.REFUSAL.format(name=name)), _OUTCOME: "forbidden"}
    try:
        # What the tool changes is logged as this assistant's: its client name and its token or grant.
        with acting_as(scope.access.actor.with_client(scope.client_name)):
            if isinstance(tool, Tool):
                parsed = tool.parse(arguments)
                ctx = scope.tool_context()
                answer = tool_answer(await tool.handler(ctx, parsed), protocol_version=scope.protocol_version)
                if tasking.answers_with_task(scope, tool_tasks=tool.tasks, proposed=ctx.proposed):
                    return await tasking.task_answer(
                        scope, tool=tool.name, suggestion_uid=ctx.proposed[0], answer=answer
                    )
                return answer
            return await tool.handler(scope, arguments)
    except ToolError as exc:
        return tool_failure(str(exc))
    except Exception:
        logger.exception("MCP tool %s failed", name)
        return {
            **tool_failure(f"Internal error while running {name}; the server log has the details."),
            _OUTCOME: "internal_error",
        }


async def list_resources(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    try:
        return await providers.list_resources(scope.tool_context(), params.get("cursor"))
    except providers.InvalidCursor as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from exc


async def read_resource(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    uri = params["uri"]
    try:
        return await providers.read_resource(scope.tool_context(), uri)
    except providers.ResourceNotFound as exc:
        # -32002 was retired in 2026-07-28, where a missing resource is plain invalid params.
        code = INVALID_PARAMS if scope.era == "stateless" else RESOURCE_NOT_FOUND
        raise RpcError(code, str(exc), {"uri": uri}) from exc


async def list_resource_templates(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    return providers.list_templates()


async def subscribe(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    assert scope.session is not None
    uri = params["uri"]
    ctx = scope.tool_context()
    # Every spelling of a note is one subscription, under the URI resources/list gives it.
    document = await DOCUMENTS.canonical_of(ctx, uri)
    if document is None:
        try:  # another provider's resource: subscribable if this caller may read it
            await providers.read_resource(ctx, uri)
        except providers.ResourceNotFound as exc:
            raise RpcError(RESOURCE_NOT_FOUND, str(exc), {"uri": uri}) from exc
    try:
        await sync_to_async(subscription_add)(
            session_id=scope.session.id,
            uri=document.uri if document else uri,
            doc_id=document.doc_id if document else "",
        )
    except TooManySubscriptions as exc:
        raise RpcError(INVALID_PARAMS, str(exc), {"uri": uri, "limit": exc.limit}) from exc
    return {}


async def unsubscribe(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    assert scope.session is not None
    uri = params["uri"]
    document = await DOCUMENTS.canonical_of(scope.tool_context(), uri)
    await sync_to_async(subscription_remove)(
        session_id=scope.session.id, uri=uri, doc_id=document.doc_id if document else ""
    )
    return {}


async def list_prompts(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    return prompts.list_prompts()


async def get_prompt(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    try:
        return await prompts.get_prompt(scope.tool_context(), params["name"], params.get("arguments"))
    except prompts.PromptError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from exc


async def complete(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    return await prompts.complete(scope.tool_context(), params["ref"], params["argument"])


SHARED_METHODS: dict[str, Handler] = {
    "tools/list": list_tools,
    "tools/call": call_tool,
    "resources/list": list_resources,
    "resources/read": read_resource,
    "resources/templates/list": list_resource_templates,
    "prompts/list": list_prompts,
    "prompts/get": get_prompt,
    "completion/complete": complete,
}
# `initialize` is the handshake module's: it creates the session.
HANDSHAKE_METHODS: dict[str, Handler] = {
    **SHARED_METHODS,
    "ping": ping,
    "logging/setLevel": set_log_level,
    "resources/subscribe": subscribe,
    "resources/unsubscribe": unsubscribe,
}
STATELESS_METHODS: dict[str, Handler] = {
    **SHARED_METHODS,
    "server/discover": discover,
    tasking.GET: tasking.get_task,
    tasking.UPDATE: tasking.update_task,
    tasking.CANCEL: tasking.cancel_task,
}


# ------------------------------------------------------------------------------------------- running


def validate_params(method: str, version: str, params: dict[str, Any] | None) -> None:
    if request_params_pass(method, version, params):
        return
    from mcp_types import methods as wire

    try:
        wire.validate_client_request(method, version, params)
    except KeyError as exc:
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method} (protocol {version}).") from exc
    except ValidationError as exc:
        raise RpcError(
            INVALID_PARAMS, f"Invalid params for {method}: {short_validation_message(exc)}"
        ) from exc


def stateless_result(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """Add what every 2026-07-28 result carries: `resultType`, cache hints, the server's identity."""
    shaped = {"resultType": "complete", **result}
    if method in CACHE_TTL_MS:
        shaped.setdefault("ttlMs", CACHE_TTL_MS[method])
        # Results depend on the caller's token, so shared caches must not reuse them.
        shaped.setdefault("cacheScope", "private")
    meta = dict(shaped.get("_meta") or {})
    meta.setdefault(SERVER_INFO_META_KEY, server_info())
    shaped["_meta"] = meta
    return shaped


async def run_request(scope: CallScope, request: Request) -> dict[str, Any]:
    """The JSON-RPC response message for `request`; never raises (except on cancellation)."""
    table = STATELESS_METHODS if scope.era == "stateless" else HANDSHAKE_METHODS
    try:
        handler = table.get(request.method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {request.method}")
        if request.method in tasking.METHODS:  # the extension's, not in the protocol's schema
            tasking.check_request(scope, request.method, request.params)
        else:
            validate_params(request.method, scope.protocol_version, request.params)
        problem = find_unencodable(request.params, where="params")
        if problem is None and request.method == "tools/call":
            problem = find_nul((request.params or {}).get("arguments"), where="arguments")
        if problem is None:
            result = await handler(scope, dict(request.params or {}))
        elif request.method == "tools/call":
            result = tool_failure(f"Refused, nothing was changed: {problem}.")
        else:
            raise RpcError(INVALID_PARAMS, f"Invalid params for {request.method}: {problem}.")
        if scope.era == "stateless":
            result = stateless_result(request.method, result)
        return result_response(request.id, result)
    except RpcError as exc:
        return error_response(request.id, exc)
    except Exception:
        logger.exception("MCP method %s failed", request.method)
        return error_response(
            request.id, RpcError(INTERNAL_ERROR, "Internal error; the server log has details.")
        )
