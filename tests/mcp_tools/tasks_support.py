"""A 2026-07-28 assistant that declares the Tasks extension, the note it edits and the reviewer who decides:
shared by the tests of tasks on the wire (transport/test_tasking.py) and of their notifications
(notifications/test_task_status.py)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from mcp.shared.inbound import encode_header_value

from lensrelay.vault.documents import document_create
from mcp_tools.models import McpTask
from mcp_tools.transport.tasking import EXTENSION
from suggestions.models import Suggestion
from tests.mcp_tools.test_transport_support import Mcp, TokenFactory

TEXT = "# Leaf\n\nPlants make sugar from light. Roots drink water 🌱.\n"
TASKS: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}}}


class Assistant:
    """A 2026-07-28 client that declares the Tasks extension (or not), as one token."""

    def __init__(self, mcp: Mcp, *, declares: bool = True) -> None:
        self.mcp, self.meta = mcp, (TASKS if declares else None)

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = await self.mcp.modern("tools/call", {"name": name, "arguments": arguments}, meta=self.meta)
        assert reply.status == 200, reply.response.text
        return reply.result

    async def task(self, method: str, task_id: Any, **params: Any) -> Any:
        # As the SDKs send it: a value that is not plain ASCII travels base64-wrapped.
        name = encode_header_value(task_id) if isinstance(task_id, str) else ""
        return await self.mcp.modern(
            method, {"taskId": task_id, **params}, meta=self.meta, headers={"Mcp-Name": name}
        )

    async def get(self, task_id: str) -> dict[str, Any]:
        reply = await self.task("tasks/get", task_id)
        assert reply.status == 200, reply.response.text
        return reply.result


@pytest.fixture
async def leaf(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Leaf.md", text=TEXT)


@pytest.fixture
async def rita() -> User:
    return await sync_to_async(User.objects.create_superuser)("rita", "r@example.org", "pw")


async def suggesting(http: Any, tokens: TokenFactory, **kwargs: Any) -> Assistant:
    return Assistant(Mcp(http, await tokens("suggest", **kwargs)))


async def edit_as_task(assistant: Assistant, old: str = "sugar", new: str = "glucose") -> dict[str, Any]:
    await assistant.call("read", {"file_path": "Lens/Leaf.md"})
    return await assistant.call("edit", {"file_path": "Lens/Leaf.md", "old_string": old, "new_string": new})


async def row_of(task_id: str) -> Suggestion:
    task = await McpTask.objects.aget(pk=task_id)
    return await Suggestion.objects.aget(uid=task.suggestion_uid)
