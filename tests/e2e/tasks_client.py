"""The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) from the official MCP Python SDK.

The SDK (2.3) has no tasks API of its own, but its extension mechanism is made for this: a
`ClientExtension` declares the extension in every request's client capabilities and claims the
`resultType: "task"` shape of `tools/call`; its resolver polls `tasks/get` through the session's own
`send_request` (which sets `Mcp-Name` to the task id, as the SEP asks, from `name_param`). So
`Client.call_tool` returns once a person decided, and `client.session.call_tool(..., allow_claimed=True)`
hands the task itself to code that polls or cancels on its own (tests, bench/run_tasks.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from pydantic import ConfigDict, Field

EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")


class CreateTaskResult(types.Result):
    """What a `tools/call` answered with a task carries (the SEP's `Result & Task`)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    status_message: str | None = Field(default=None, alias="statusMessage")
    created_at: str = Field(alias="createdAt")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    ttl_ms: int | None = Field(alias="ttlMs")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class DetailedTask(types.Result):
    """`tasks/get`'s answer: the task, with `result` once completed (`error` once failed)."""

    model_config = ConfigDict(extra="allow")
    task_id: str = Field(alias="taskId")
    status: str
    status_message: str | None = Field(default=None, alias="statusMessage")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


async def get_task(client: Client, task_id: str) -> DetailedTask:
    request = GetTask(params=TaskParams(taskId=task_id))
    return await client.session.send_request(request, DetailedTask)


async def cancel_task(client: Client, task_id: str) -> None:
    await client.session.send_request(CancelTask(params=TaskParams(taskId=task_id)), types.EmptyResult)


async def call_as_task(client: Client, name: str, arguments: dict[str, Any]) -> CreateTaskResult:
    """A `tools/call` whose answer must be a task (the caller polls it)."""
    result = await client.session.call_tool(name, arguments, allow_claimed=True)
    assert isinstance(result, CreateTaskResult), result
    return result


async def edit_as_task(client: Client, path: str, old: str, new: str) -> CreateTaskResult:
    """Read the note, then `edit` it as a task (its suggestion waits for a person)."""
    await client.call_tool("read", {"file_path": path})
    return await call_as_task(client, "edit", {"file_path": path, "old_string": old, "new_string": new})


async def wait_task(
    client: Client,
    task_id: str,
    *,
    until: Sequence[str] = TERMINAL,
    interval: float = 0.05,
    timeout: float = 30.0,
) -> DetailedTask:
    """Poll `tasks/get` until the task's status is one of `until`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        task = await get_task(client, task_id)
        if task.status in until:
            return task
        if loop.time() > deadline:
            raise TimeoutError(f"task {task_id} still {task.status} after {timeout} s: {task.status_message}")
        await asyncio.sleep(interval)


class Tasks(ClientExtension):
    """Declares the extension and resolves a task answer by polling until it ends."""

    identifier = EXTENSION

    def __init__(self, *, interval: float = 0.05, timeout: float = 60.0) -> None:
        self.interval, self.timeout = interval, timeout

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve)]

    async def _resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        deadline = asyncio.get_running_loop().time() + self.timeout
        while True:
            request = GetTask(params=TaskParams(taskId=created.task_id))
            task = await ctx.session.send_request(request, DetailedTask)
            if task.status == "completed" and task.result is not None:
                return types.CallToolResult.model_validate(task.result)
            if task.status in TERMINAL:
                text = types.TextContent(type="text", text=task.status_message or task.status)
                return types.CallToolResult(content=[text], is_error=True)
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"task {created.task_id} still {task.status}")
            await asyncio.sleep(self.interval)


@asynccontextmanager
async def tasks_client(base_url: str, token: str, **options: Any) -> AsyncIterator[Client]:
    """The official SDK client in protocol 2026-07-28 (the extension's era), declaring the extension."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with http:
        transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
        async with Client(transport, mode="2026-07-28", extensions=[Tasks(**options)]) as client:
            yield client


class TaskListener:
    """A `subscriptions/listen` stream asking for `notifications/tasks` (the SEP's `taskIds` filter). The
    SDK's `Client.listen` neither sends that filter nor passes the extension's notifications on, so this
    speaks the wire itself: one POST answered by a text/event-stream, read message by message."""

    def __init__(self, messages: AsyncIterator[dict[str, Any]], acknowledged: dict[str, Any]) -> None:
        self._messages, self.acknowledged = messages, acknowledged

    async def next(self, timeout: float = 10.0) -> dict[str, Any]:
        return await asyncio.wait_for(self._messages.__anext__(), timeout=timeout)


@asynccontextmanager
async def listen_tasks(
    base_url: str, token: str, task_ids: Sequence[str], *, request_id: int = 1
) -> AsyncIterator[TaskListener]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "task-listener", "version": "1"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": list(task_ids)}, "_meta": meta},
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "subscriptions/listen",
    }
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(10.0, read=None)) as http,
        http.stream("POST", f"{base_url}/mcp", json=body, headers=headers) as response,
    ):
        assert response.status_code == 200, await response.aread()

        async def messages() -> AsyncIterator[dict[str, Any]]:
            data: list[str] = []
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line:
                    text, data = "\n".join(data), []
                    if text:  # the priming event (an id and `retry`, no message) carries none
                        yield json.loads(text)

        stream = messages()
        ack = await asyncio.wait_for(stream.__anext__(), timeout=10)
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        yield TaskListener(stream, ack["params"])
