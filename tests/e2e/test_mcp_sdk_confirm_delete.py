"""A forced `delete` of a note others link to is confirmed with the person through the official SDK client's
elicitation callback: declined, nothing is suggested; accepted, the suggestion is made and says so; a client
without elicitation (and the stateless era) is told how the reviewer checks instead."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .relay import Relay

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TIMEOUT = 30.0


@pytest.fixture(scope="module")
def token(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("confirm-vault")
    (root / "Target.md").write_text("The target.\n")
    (root / "Second.md").write_text("Also a target.\n")
    (root / "Linking.md").write_text("See [[Target]] and [[Second]].\n")
    relay.setup(imports=[(root, "Confirm")])
    return relay.tokens["suggest"]


@asynccontextmanager
async def connect(relay: Relay, token: str, **options: Any) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{relay.http_url}/mcp", http_client=http)
        async with Client(transport, **options) as client:
            yield client


def answering(action: str, confirm: bool, asked: list[str]) -> Any:
    async def callback(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action, content={"confirm": confirm} if action == "accept" else None)

    return callback


def text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_a_forced_delete_is_confirmed_with_the_person(relay: Relay, token: str) -> None:
    asked: list[str] = []
    async with connect(
        relay, token, mode="legacy", elicitation_callback=answering("decline", False, asked)
    ) as client:
        result = await client.call_tool("delete", {"file_path": "Confirm/Target.md", "force": True})
        assert (
            result.is_error and "did not confirm" in text(result) and "Nothing was suggested" in text(result)
        )
        assert asked and "Confirm/Linking.md" in asked[0] and "Confirm/Target.md" in asked[0]
        listed = text(await client.call_tool("list_suggestions", {"path": "Confirm/Target.md"}))
        assert listed == "No suggestions found."
    async with connect(
        relay, token, mode="legacy", elicitation_callback=answering("accept", True, asked)
    ) as client:
        result = await client.call_tool("delete", {"file_path": "Confirm/Target.md", "force": True})
        assert not result.is_error and "The person confirmed it" in text(result), text(result)
    # Accepting the form without ticking the box is not a confirmation.
    async with connect(
        relay, token, mode="legacy", elicitation_callback=answering("accept", False, asked)
    ) as client:
        result = await client.call_tool("delete", {"file_path": "Confirm/Second.md", "force": True})
        assert result.is_error and "did not confirm" in text(result)


async def test_a_client_that_cannot_ask_is_told_how_it_is_checked(relay: Relay, token: str) -> None:
    async with connect(relay, token) as client:  # 2026-07-28: no server requests
        result = await client.call_tool("delete", {"file_path": "Confirm/Second.md", "force": True})
        assert not result.is_error and "could not ask the person" in text(result), text(result)
        assert "the reviewer sees the 1 linking note(s)" in text(result)
