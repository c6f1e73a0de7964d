"""`subscriptions/listen` (2026-07-28) with the official `mcp` SDK client's `Client.listen`, beside a
handshake-era session subscribed to the same note: both hear the same edits from a Yjs client, within the
token's folders only; the acknowledgment names what is honoured; closing the stream ends its session."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from .notify_clients import TIMEOUT, Heard, sdk_client
from .relay import Relay, TokenSpec

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

RELAY_ENV = {"LENSRELAY_MCP_EVENTS_POLL_SECONDS": "0.2"}
WATCHED, ELSEWHERE = "lens://Listen/Watched.md", "lens://Hidden/Elsewhere.md"


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("listen-vault")
    (root / "Watched.md").write_text("The watched note.\n")
    hidden = tmp_path_factory.mktemp("listen-hidden")
    (hidden / "Elsewhere.md").write_text("Not for the listen-only token.\n")
    return relay.setup(
        imports=[(root, "Listen"), (hidden, "Hidden")],
        tokens={"listen-only": TokenSpec("suggest", ("Listen",))},
    )


@asynccontextmanager
async def stateless(relay: Relay, token: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{relay.http_url}/mcp", http_client=http)
        async with Client(transport) as client:
            assert client.session.protocol_version == "2026-07-28"
            yield client


async def next_event(subscription: Any, seconds: float = 10.0) -> Any:
    return await asyncio.wait_for(subscription.__anext__(), timeout=seconds)


async def test_both_eras_hear_the_same_edits_within_the_tokens_folders(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    token = vault["listen-only"]
    doc_id = await relay.doc_id(token, folder="Listen", path="/Watched.md")
    hidden_id = await relay.doc_id(relay.tokens["edit"], folder="Hidden", path="/Elsewhere.md")
    heard = Heard()
    async with stateless(relay, token) as client, sdk_client(relay.http_url, token, heard) as legacy:
        await legacy.subscribe_resource(WATCHED)
        listening = client.listen(
            resources_list_changed=True, resource_subscriptions=[WATCHED, ELSEWHERE, "lens://Listen/Nope.md"]
        )
        async with listening as subscription:
            # Only the note this token may read is honoured; tool and prompt lists never change here.
            assert subscription.honored.resource_subscriptions == [WATCHED]
            assert subscription.honored.resources_list_changed is True
            assert not subscription.honored.tools_list_changed

            writer = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]})
            started = time.monotonic()
            await writer.insert(0, "Edited. ")
            event = await next_event(subscription)
            latency = time.monotonic() - started
            print(f"listen: resources/updated {latency * 1000:.0f} ms after the edit")
            assert event == ResourceUpdated(uri=WATCHED)
            updated = await heard.wait(
                lambda: heard.of(types.ResourceUpdatedNotification), "resources/updated"
            )
            assert str(updated[0].params.uri) == WATCHED

            # An edit in a folder the token does not see is heard by nobody.
            other = await yclients(
                relay.doc_url(hidden_id), hidden_id, params={"token": relay.tokens["edit"]}
            )
            await other.insert(0, "Secret. ")
            with pytest.raises(TimeoutError):
                await next_event(subscription, seconds=1.5)

            # A new note in the token's folder: the list changed.
            await client.call_tool("write", {"file_path": "Listen/New.md", "content": "A new note.\n"})
            for _ in range(5):
                event = await next_event(subscription)
                if isinstance(event, ResourcesListChanged):
                    break
            assert isinstance(event, ResourcesListChanged)


async def test_a_bad_filter_is_refused_and_opens_nothing(relay: Relay, vault: dict[str, str]) -> None:
    token = vault["listen-only"]
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "subscriptions/listen",
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        for notifications in ("everything", {"resourceSubscriptions": "lens://Listen/Watched.md"}):
            body = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "subscriptions/listen",
                "params": {"notifications": notifications, "_meta": meta},
            }
            answer = await http.post(f"{relay.http_url}/mcp", json=body, headers=headers)
            assert answer.status_code == 400 and answer.json()["error"]["code"] == -32602
        body = {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "subscriptions/listen",
            "params": {"notifications": {}, "_meta": meta},
        }
        answer = await http.post(
            f"{relay.http_url}/mcp", json=body, headers={**headers, "Accept": "application/json"}
        )
        assert answer.status_code == 400 and "accept" in answer.json()["error"]["message"]
