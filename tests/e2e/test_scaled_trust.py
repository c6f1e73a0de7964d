"""Trust across two daphne workers on one PostgreSQL database and one Redis (the scaled-out shape).

Revoking or narrowing a token in a third process cuts off its sockets on both workers within a second,
and ends its MCP session whichever worker it talks to; two reviewers, each signed in at a different
worker, race accept against reject on 20 suggestions per kind and exactly one of each pair wins.

MCP over the two workers: what one worker keeps in memory never overrules the other. A read on one worker
lets an edit through on the other (read-before-edit follows the session, not the process), an edit
before any read is refused on both, and a token revoked by a third process is refused on both workers'
next request although each had kept it. (All on the module's one cluster.)
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import YClientFactory
from tests.e2e.liveserver import LiveServer, run_manage
from tests.e2e.test_decision_race_http import (
    KINDS,
    Pending,
    propose_pending,
    race_and_check,
    sign_in_reviewers,
)
from tests.e2e.test_revocation import (
    change_token,
    expect_closed,
    mcp_session,
    raw_mcp_post,
    text_of,
    watch_closing,
)
from tests.e2e.test_scaled import api_documents, cluster

pytestmark = [
    pytest.mark.scaled,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

Workers = tuple[LiveServer, LiveServer, dict[str, str]]


@pytest.fixture(scope="module")
def workers(node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    """Two workers on a fresh PostgreSQL database and a private Redis, with the folder Team imported."""
    with cluster(tmp_path_factory, shared={}, each=[{}, {}]) as (live, _):
        yield live.a, live.b, {"token": live.token}


def doc_id_of(server: LiveServer, token: str, path: str) -> str:
    [document] = api_documents(server, token, path)
    return str(document["doc_id"])


def manage_on(server: LiveServer) -> Callable[..., str]:
    """`manage.py ARGS` against the workers' shared database, as a third process."""

    def manage(*args: str) -> str:
        return run_manage(server.env, *args).stdout

    return manage


@pytest.fixture(scope="module")
def scoped_token(workers: Workers, tmp_path_factory: pytest.TempPathFactory) -> str:
    first, _, _ = workers
    vault = tmp_path_factory.mktemp("other-vault")
    (vault / "Note.md").write_text("The other folder's note.\n")
    run_manage(first.env, "import_vault", str(vault), "--folder", "Other")
    created = run_manage(
        first.env, "create_token", "--name", "cut", "--role", "edit", "--folder", "Team", "--folder", "Other"
    )
    return created.stdout.strip().splitlines()[-1]


async def test_narrowing_and_revoking_reach_both_workers(
    workers: Workers,
    scoped_token: str,
    yclients: YClientFactory,
) -> None:
    first, second, _ = workers
    raw = scoped_token
    team = doc_id_of(first, raw, "Team/Shared.md")
    other = doc_id_of(second, raw, "Other/Note.md")
    on_first = await yclients(first.doc_server_url(team), team, params={"token": raw}, label="w1-team")
    on_second = await yclients(second.doc_server_url(team), team, params={"token": raw}, label="w2-team")
    lost = await yclients(second.doc_server_url(other), other, params={"token": raw}, label="w2-other")

    async with mcp_session(second.http_url, raw) as (client, issued):
        assert "other folder" in text_of(await client.call_tool("read", {"file_path": "Other/Note.md"}))
        watchers = watch_closing(lost)
        committed = await change_token(manage_on(first), raw, keep=["Team"])
        await expect_closed(watchers, code=4403, committed=committed)
    assert (await raw_mcp_post(first.http_url, raw, issued[0])).status_code == 404
    await asyncio.sleep(0.5)
    assert on_first.events_named("closed") == [] and on_second.events_named("closed") == []

    watchers = watch_closing(on_first, on_second)
    committed = await change_token(manage_on(second), raw, keep=None)
    await expect_closed(watchers, code=4401, committed=committed)
    started = time.monotonic()
    for server in (first, second):
        assert (await raw_mcp_post(server.http_url, raw, issued[0])).status_code == 401
    assert time.monotonic() - started < 5


@pytest.fixture(scope="module")
def pending(workers: Workers, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Pending]]:
    first, _, _ = workers
    return propose_pending(manage_on(first), Path(tmp_path_factory.mktemp("race-vault")))


@pytest.mark.parametrize("kind", KINDS)
async def test_reviewers_on_different_workers_have_one_winner(
    workers: Workers,
    pending: dict[str, list[Pending]],
    kind: str,
) -> None:
    first, second, _ = workers
    reviewers = await asyncio.to_thread(sign_in_reviewers, {"alice": first.http_url, "bob": second.http_url})
    await race_and_check(manage_on(first), kind, pending[kind], reviewers)


# --------------------------------------------------------------------- MCP across the two workers

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
def token(workers: Workers) -> str:
    created = run_manage(workers[0].env, "create_token", "--name", "two-workers", "--role", "edit")
    return created.stdout.strip().splitlines()[-1]


async def test_read_before_edit_and_revocation_hold_across_two_workers(workers: Workers, token: str) -> None:
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
