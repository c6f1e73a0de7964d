"""MCP over two daphne workers on one database: what one worker keeps in memory never overrules the other.

A read on one worker lets an edit through on the other (read-before-edit follows the session, not the
process), an edit before any read is refused on both, and a token revoked by a third process is refused
on both workers' next request although each had kept it.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.e2e.liveserver import LiveServer, run_manage
from tests.e2e.test_revocation import change_token
from tests.e2e.test_scaled_trust import manage_on, workers  # noqa: F401  (the two workers, reused)

pytestmark = [pytest.mark.scaled]

Workers = tuple[LiveServer, LiveServer, dict[str, str]]
NOTE = "Team/Shared.md"


class Rpc:
    """One MCP session that may send each request to either worker."""

    def __init__(self, http: httpx.AsyncClient, token: str) -> None:
        self.http, self.token, self.session_id, self.next_id = http, token, "", 0

    def headers(self) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
        }
        return {**headers, "Mcp-Session-Id": self.session_id} if self.session_id else headers

    async def post(self, worker: LiveServer, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(
            f"{worker.http_url}/mcp", headers=self.headers(), content=json.dumps(body)
        )

    async def open(self, worker: LiveServer) -> None:
        reply = await self.post(
            worker,
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "two-workers", "version": "1"},
                },
            },
        )
        assert reply.status_code == 200, reply.text
        self.session_id = reply.headers["Mcp-Session-Id"]
        notified = await self.post(worker, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert notified.status_code == 202

    async def call(self, worker: LiveServer, tool: str, arguments: dict[str, Any]) -> tuple[int, str, bool]:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call"}
        reply = await self.post(worker, {**body, "params": {"name": tool, "arguments": arguments}})
        if reply.status_code != 200:
            return reply.status_code, reply.text, True
        result = reply.json()["result"]
        return 200, "\n".join(b["text"] for b in result["content"]), bool(result.get("isError"))


@pytest.fixture
def token(workers: Workers) -> str:  # noqa: F811
    created = run_manage(workers[0].env, "create_token", "--name", "two-workers", "--role", "edit")
    return created.stdout.strip().splitlines()[-1]


async def test_read_before_edit_and_revocation_hold_across_two_workers(workers: Workers, token: str) -> None:  # noqa: F811
    first, second, _ = workers
    edit = {"file_path": NOTE, "old_string": "Written once", "new_string": "Written twice"}
    async with httpx.AsyncClient(timeout=30) as http:
        rpc = Rpc(http, token)
        await rpc.open(first)
        status, text, error = await rpc.call(second, "edit", edit)
        assert status == 200 and error and "You must read this document before editing it" in text
        status, text, error = await rpc.call(first, "read", {"file_path": NOTE})
        assert status == 200 and not error and "Written once" in text
        status, text, error = await rpc.call(second, "edit", edit)
        assert status == 200 and not error, text
        # both workers now keep the token; a third process revokes it
        assert (await rpc.call(first, "read", {"file_path": NOTE}))[0] == 200
        await change_token(manage_on(first), token, keep=None)
        for worker in (second, first):
            status, text, _ = await rpc.call(worker, "read", {"file_path": NOTE})
            assert status == 401, text
