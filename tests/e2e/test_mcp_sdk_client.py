"""The official `mcp` Python SDK client against a real daphne server, at the transport level.

Both negotiation modes: `mode="legacy"` (initialize handshake, 2025-11-25, a session) and the default
`"auto"` (server/discover, the stateless 2026-07-28 era). The calls go to the conformance fixture tools,
which the server offers in this configuration, so these tests do not depend on the knowledge-base tools.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from .errors import leaves
from .liveserver import LiveServer, lensrelay_server

pytestmark = [
    pytest.mark.e2e,
    # ping and logging/setLevel are deprecated in 2026-07-28, yet exactly what the legacy mode must still do.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TIMEOUT = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live = lensrelay_server(tmp_path_factory.mktemp("mcp-sdk"), LENSRELAY_MCP_CONFORMANCE_FIXTURES="1")
    live.start()
    try:
        yield live
    finally:
        live.stop()


def create_token(server: LiveServer, role: str) -> str:
    result = server.manage("create_token", "--name", f"sdk-{role}", "--role", role)
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def token(server: LiveServer) -> str:
    return create_token(server, "edit")


@asynccontextmanager
async def connect(server: LiveServer, token: str, **options: Any) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{server.http_url}/mcp", http_client=http)
        async with Client(transport, **options) as client:
            yield client


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


async def test_legacy_mode_handshake_tools_and_ping(server: LiveServer, token: str) -> None:
    async with connect(server, token, mode="legacy") as client:
        session = client.session
        assert session.protocol_version == "2025-11-25"
        assert session.server_info is not None and session.server_info.name == "lens-relay"
        assert session.server_capabilities is not None and session.server_capabilities.tools is not None

        listed = await client.list_tools()
        names = {tool.name for tool in listed.tools}
        assert {"test_simple_text", "test_error_handling"} <= names
        assert all(tool.description for tool in listed.tools)

        result = await client.call_tool("test_simple_text", {})
        assert result.is_error is False
        assert texts(result) == ["This is a simple text response for testing."]

        assert isinstance(await client.send_ping(), types.EmptyResult)

        failed = await client.call_tool("test_error_handling", {})
        assert failed.is_error is True

        unknown = await client.call_tool("no_such_tool", {})
        assert unknown.is_error is True
        assert "Unknown tool: no_such_tool" in texts(unknown)[0]


async def test_legacy_mode_log_messages_and_sampling_arrive_over_sse(server: LiveServer, token: str) -> None:
    logs: list[types.LoggingMessageNotificationParams] = []
    prompts: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_sampling(
        context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        content = params.messages[0].content
        prompts.append(content.text if isinstance(content, types.TextContent) else "")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="forty-two"), model="stub"
        )

    async with connect(
        server, token, mode="legacy", logging_callback=on_log, sampling_callback=on_sampling
    ) as client:
        await client.set_logging_level("debug")
        result = await client.call_tool("test_tool_with_logging", {})
        assert result.is_error is False
        assert [entry.data for entry in logs] == [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]

        sampled = await client.call_tool("test_sampling", {"prompt": "What is six times seven?"})
        assert prompts == ["What is six times seven?"]
        assert texts(sampled) == ["LLM response: forty-two"]


async def test_auto_mode_negotiates_the_stateless_era(server: LiveServer, token: str) -> None:
    async with connect(server, token) as client:
        session = client.session
        assert session.protocol_version == "2026-07-28"
        assert session.discover_result is not None
        assert "2026-07-28" in session.discover_result.supported_versions
        assert session.server_info is not None and session.server_info.name == "lens-relay"

        listed = await client.list_tools()
        assert "test_simple_text" in {tool.name for tool in listed.tools}

        result = await client.call_tool("test_simple_text", {})
        assert texts(result) == ["This is a simple text response for testing."]

        unknown = await client.call_tool("no_such_tool", {})
        assert unknown.is_error is True


async def test_auto_mode_logs_only_when_the_request_asks(server: LiveServer, token: str) -> None:
    logs: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async with connect(server, token, logging_callback=on_log) as client:
        await client.call_tool("test_tool_with_logging", {})
        assert logs == []
    async with connect(server, token, logging_callback=on_log, log_level="info") as client:
        await client.call_tool("test_tool_with_logging", {})
        assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]


async def test_auto_mode_cannot_sample_but_says_why(server: LiveServer, token: str) -> None:
    async def on_sampling(
        context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        raise AssertionError("the stateless era has no server-to-client requests")

    async with connect(server, token, sampling_callback=on_sampling) as client:
        result = await client.call_tool("test_sampling", {"prompt": "hello"})
        assert result.is_error is True
        assert "2026-07-28" in texts(result)[0]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_wrong_token_cannot_connect_and_is_told_why(server: LiveServer, mode: str) -> None:
    with pytest.raises(BaseException) as caught:
        async with connect(server, "lr_not-a-real-token", mode=mode) as client:
            await client.list_tools()
    errors = [leaf for leaf in leaves(caught.value) if isinstance(leaf, MCPError)]
    assert errors, f"expected an MCPError, got {caught.value!r}"
    assert "Unauthorized" in str(errors[0])


async def test_a_view_token_connects_in_both_modes(server: LiveServer, tmp_path: Path) -> None:
    view = create_token(server, "view")
    for mode in ("legacy", "auto"):
        async with connect(server, view, mode=mode) as client:
            listed = await client.list_tools()
            assert all(tool.annotations is None or tool.annotations.read_only_hint for tool in listed.tools)
