"""Server-sent MCP notifications across two daphne workers on PostgreSQL and Redis.

The official `mcp` SDK client talks to worker A only (its GET stream is held there); the changes happen on
worker B: an npm y-websocket client edits the subscribed note, a staff member accepts the session's
suggestion in B's admin. A raw client then resumes on B with the `Last-Event-ID` it got from A.
Without PostgreSQL or Redis these tests fail (see `require_services`), never skip.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.notify_clients import Heard, RawSession, event_ids
from tests.e2e.test_scaled import Admin, Cluster, cluster

pytestmark = [
    pytest.mark.scaled,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

SHARED = {"LENSRELAY_MCP_EVENTS_POLL_SECONDS": "0.2"}


@pytest.fixture(scope="module")
def two(node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory, shared=SHARED, each=[{}, {}]) as (live, _):
        yield live


@asynccontextmanager
async def on_worker_a(two: Cluster, heard: Heard) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {two.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(f"{two.a.http_url}/mcp", http_client=http)
        async with Client(transport, mode="legacy", message_handler=heard.handler) as client:
            await asyncio.sleep(0.3)  # the SDK opens its GET stream in the background
            yield client


async def test_an_edit_on_worker_b_reaches_a_subscriber_on_worker_a(two: Cluster, yclients: Any) -> None:
    doc_id = two.doc_id("Team/Shared.md")
    heard = Heard()
    async with on_worker_a(two, heard) as client:
        uri = "lens://Team/Shared.md"
        await client.subscribe_resource(uri)
        on_b = await yclients(two.b.doc_server_url(doc_id), doc_id, params={"token": two.token})
        started = time.monotonic()
        await on_b.insert(0, "Edited on B. ")
        updated = await heard.wait(lambda: heard.of(types.ResourceUpdatedNotification), "resources/updated")
        elapsed = time.monotonic() - started
        assert [str(n.params.uri) for n in updated] == [uri]
        assert elapsed < 3.0
        print(f"edit on worker B -> notification on worker A: {elapsed * 1000:.0f} ms")


async def test_an_admin_accept_on_b_tells_the_proposing_session_on_a(two: Cluster) -> None:
    heard = Heard()
    async with on_worker_a(two, heard) as client:
        await client.call_tool("read", {"file_path": "Team/Busy.md"})
        result = await client.call_tool(
            "edit", {"file_path": "Team/Busy.md", "old_string": "base", "new_string": "summit"}
        )
        assert not result.is_error
        [(pk,)] = two.query("SELECT id FROM suggestions_suggestion WHERE status = 'pending'")
        admin = await asyncio.to_thread(Admin, two.b)
        response = await asyncio.to_thread(
            admin.post, f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "accept"}
        )
        assert response.status_code == 302
        decided = await heard.wait(lambda: heard.of(types.LoggingMessageNotification), "decision")
        data = decided[0].params.data
        assert data["type"] == "suggestion_decided"
        assert data["status"] == "accepted" and data["path"] == "Team/Busy.md" and data["decidedBy"] == "ada"


async def test_a_stream_resumed_on_the_other_worker_replays_what_it_missed(
    two: Cluster, yclients: Any
) -> None:
    doc_id = two.doc_id("Team/Doomed.md")
    uri = "lens://Team/Doomed.md"
    async with httpx2.AsyncClient(timeout=30) as http:
        raw = RawSession(http, two.token)
        await raw.open(two.a.http_url)
        await raw.subscribe(two.b.http_url, uri)
        last = await raw.first_event_id(two.a.http_url)
        on_a = await yclients(two.a.doc_server_url(doc_id), doc_id, params={"token": two.token})
        await on_a.insert(0, "While away. ")
        await asyncio.sleep(1.0)
        received = await raw.resume_until(two.b.http_url, last, "notifications/resources/updated")
        assert uri in received
        assert event_ids(received)[-1] > last
