"""The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, final) on the wire, in protocol 2026-07-28.

A client declares the extension in a request's client capabilities (`_meta`); the server alone decides
whether to answer with a task. Here it does when a write tool (`edit`, `multi_edit`, `write`, `move`,
`delete`) proposed a suggestion: the answer is `resultType: "task"` with the task's id, and the task
completes when a person decides the suggestion. Every other call, and every call of a client that did not
declare the extension, gets today's answer (the SEP forbids a task to a client that did not declare it).

- `tasks/get {taskId}`: the task as it stands, read from the suggestion's row (mcp_tools/tasks/outcome.py);
  once completed its `result` is a `tools/call` result saying what became of the suggestion.
- `tasks/cancel {taskId}`: withdraws the suggestion if it is still pending, and acknowledges (`{}`) either way
  (cancellation is cooperative: a person's decision that came first stands).
- `tasks/update {taskId, inputResponses}`: acknowledged; these tasks never ask the client for input.

A task is its token's alone: another token's id, or one that never existed, is the same `-32602` "Failed to
retrieve task: Task not found". A client that did not declare the extension is told `-32021` (missing
required client capability) for any of the three, as the SEP requires. The handshake era has no such
extension (the SEP: 2025-11-25's experimental tasks are another, wire-incompatible design, and the official
SDK no longer offers it): there the three methods are unknown and `params.task` is ignored, as that
revision requires of a server that declares no task capability.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from lensrelay.docstore.acting import acting_as
from lensrelay.docstore.store import get_store
from mcp_tools.models import McpTask
from mcp_tools.tasks.records import task_create, task_find, task_read, task_withdraw
from mcp_tools.tasks.wire import detailed_task, task_fields
from mcp_tools.transport.context import CallScope
from mcp_tools.transport.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, RpcError

EXTENSION = "io.modelcontextprotocol/tasks"
GET, UPDATE, CANCEL = "tasks/get", "tasks/update", "tasks/cancel"
METHODS = (GET, UPDATE, CANCEL)
MISSING_CLIENT_CAPABILITY = -32021
NOT_FOUND = "Failed to retrieve task: Task not found"


def declared(scope: CallScope) -> bool:
    """The request's client capabilities name the extension (2026-07-28 carries them on every request)."""
    if scope.era != "stateless":
        return False
    extensions = scope.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION), dict)


def answers_with_task(scope: CallScope, *, tool_tasks: bool, proposed: list[str]) -> bool:
    """Whether this call's answer is a task: a tool that proposes, one suggestion proposed, a client that
    declared the extension, a token to own it (the test configuration's anonymous caller has none)."""
    return tool_tasks and len(proposed) == 1 and declared(scope) and scope.access.token_id is not None


async def task_answer(
    scope: CallScope, *, tool: str, suggestion_uid: str, answer: dict[str, Any]
) -> dict[str, Any]:
    """The `CreateTaskResult` replacing a write tool's answer; the task is committed before it is sent."""
    text = "\n".join(block["text"] for block in answer.get("content", []) if block.get("type") == "text")
    assert scope.access.token_id is not None
    task = await sync_to_async(task_create)(
        token_id=scope.access.token_id, tool=tool, suggestion_uid=suggestion_uid, answer=text
    )
    state = await sync_to_async(task_read)(task=task)
    fields = task_fields(task, state)
    # The tool's own answer first: it names the suggestion, which the assistant may mention to a person.
    fields["statusMessage"] = f"{text}\n{state.message}" if text else state.message
    return {"resultType": "task", **fields}


# ------------------------------------------------------------------------------------------- methods


def missing_extension(what: str) -> RpcError:
    return RpcError(
        MISSING_CLIENT_CAPABILITY,
        f"Missing required client capability: {what} needs the {EXTENSION} extension declared in the "
        "request's client capabilities.",
        {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


def check_request(scope: CallScope, method: str, params: dict[str, Any] | None) -> None:
    """Refuse what no task method answers: a client without the extension, malformed params."""
    if not declared(scope):
        raise missing_extension(method)
    task_id = (params or {}).get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise RpcError(INVALID_PARAMS, f"Invalid params for {method}: taskId must be a non-empty string.")
    if method == UPDATE and not isinstance((params or {}).get("inputResponses"), dict):
        raise RpcError(INVALID_PARAMS, f"Invalid params for {method}: inputResponses must be an object.")


async def _find(scope: CallScope, params: dict[str, Any]) -> McpTask:
    task = await sync_to_async(task_find)(task_id=params["taskId"], access=scope.access)
    if task is None:
        raise RpcError(INVALID_PARAMS, NOT_FOUND)
    return task


async def get_task(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    task = await _find(scope, params)
    return detailed_task(task, await sync_to_async(task_read)(task=task))


async def cancel_task(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    task = await _find(scope, params)
    if not scope.access.can_suggest:
        raise RpcError(
            INVALID_REQUEST,
            f"This token (role {scope.access.role}) may not withdraw suggestions; the task goes on.",
        )
    # What the withdrawal changes is logged as this assistant's, as its tool calls are.
    with acting_as(scope.access.actor.with_client(scope.client_name)):
        await task_withdraw(store=get_store(), task=task)
    return {}


async def update_task(scope: CallScope, params: dict[str, Any]) -> dict[str, Any]:
    await _find(scope, params)
    return {}  # nothing is ever outstanding: responses are ignored, as the SEP says of unknown keys
