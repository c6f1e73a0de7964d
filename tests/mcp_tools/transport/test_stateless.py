"""The stateless protocol era (2026-07-28): `_meta` envelopes, routing headers, discover, result shapes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from mcp_types import methods as wire

from mcp_tools.models import McpSession
from mcp_tools.registry import Tool
from tests.mcp_tools.test_transport_support import MODERN, Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_INFO = "io.modelcontextprotocol/serverInfo"


async def test_discover_advertises_versions_and_capabilities(mcp: Mcp) -> None:
    reply = await mcp.modern("server/discover")
    assert reply.status == 200
    result = reply.result
    wire.validate_server_result("server/discover", MODERN, result)
    assert result["supportedVersions"] == ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "private" and result["ttlMs"] >= 0
    assert result["_meta"][SERVER_INFO]["name"] == "lens-relay"
    assert "tools" in result["capabilities"]
    assert "Mcp-Session-Id" not in reply.headers


async def test_no_session_is_issued_or_needed(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    reply = await mcp.modern("tools/call", {"name": "transport_echo", "arguments": {"text": "x"}})
    assert reply.result["content"][0]["text"] == "x"
    assert "Mcp-Session-Id" not in reply.headers
    assert await McpSession.objects.acount() == 0


async def test_a_stray_session_header_is_ignored(mcp: Mcp) -> None:
    reply = await mcp.modern("tools/list", headers={"Mcp-Session-Id": "whatever"})
    assert reply.status == 200


async def test_list_results_carry_result_type_and_cache_hints(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        result = (await mcp.modern(method)).result
        wire.validate_server_result(method, MODERN, result)
        assert result["resultType"] == "complete", method
        assert result["cacheScope"] == "private", method
        assert isinstance(result["ttlMs"], int), method


async def test_tools_call_results_carry_result_type(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    result = (await mcp.modern("tools/call", {"name": "transport_echo", "arguments": {"text": "y"}})).result
    wire.validate_server_result("tools/call", MODERN, result)
    assert result["resultType"] == "complete"
    assert result["isError"] is False


async def test_view_tokens_get_no_write_tools_here_either(
    mcp: Mcp, tokens: TokenFactory, test_tools: dict[str, Tool]
) -> None:
    viewer = Mcp(mcp.http, await tokens("view"))
    names = {tool["name"] for tool in (await viewer.modern("tools/list")).result["tools"]}
    assert "transport_echo" in names and "transport_write" not in names
    refused = await viewer.modern("tools/call", {"name": "transport_write", "arguments": {}})
    assert refused.result["isError"] is True


async def test_the_read_key_is_the_token_and_client(
    mcp: Mcp, tokens: TokenFactory, test_tools: dict[str, Tool]
) -> None:
    from lensrelay.models import ApiToken

    reply = await mcp.modern("tools/call", {"name": "transport_whoami", "arguments": {}})
    token = await ApiToken.objects.aget(token_hash=ApiToken.hash_token(mcp.token or ""))
    assert json.loads(reply.text()) == {
        "session_key": f"token:{token.pk}:client:pytest-client",
        "client": "pytest-client",
        "session_id": None,
    }


# -------------------------------------------------------------------------------- envelope and headers


async def test_a_request_without_meta_is_invalid_params(mcp: Mcp) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    reply = await mcp.post(body, headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    assert reply.status == 400
    assert reply.error["code"] == -32602
    assert "_meta" in reply.error["message"]


async def test_meta_needs_the_client_capabilities(mcp: Mcp) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}},
    }
    reply = await mcp.post(body, headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    assert reply.status == 400 and reply.error["code"] == -32602
    assert "clientCapabilities" in reply.error["message"]


async def test_header_and_body_versions_must_match(mcp: Mcp) -> None:
    reply = await mcp.modern("tools/list", meta={"io.modelcontextprotocol/protocolVersion": "2025-11-25"})
    assert reply.status == 400
    assert reply.error["code"] == -32020


async def test_a_modern_body_without_the_version_header_is_a_header_mismatch(mcp: Mcp) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    reply = await mcp.post(body, headers={"Mcp-Method": "tools/list"})
    assert reply.status == 400
    assert reply.error["code"] == -32020


async def test_an_unsupported_modern_version_is_32022_with_the_supported_list(mcp: Mcp) -> None:
    reply = await mcp.modern(
        "tools/list",
        meta={"io.modelcontextprotocol/protocolVersion": "2030-01-01"},
        headers={"MCP-Protocol-Version": "2030-01-01"},
    )
    assert reply.status == 400
    assert reply.error["code"] == -32022
    assert "2026-07-28" in reply.error["data"]["supported"]
    assert reply.error["data"]["requested"] == "2030-01-01"


async def test_the_method_header_must_match(mcp: Mcp) -> None:
    reply = await mcp.modern("tools/list", headers={"Mcp-Method": "prompts/list"})
    assert reply.status == 400 and reply.error["code"] == -32020
    missing = await mcp.modern("tools/list", headers={"Mcp-Method": ""})
    assert missing.status == 400 and missing.error["code"] == -32020


async def test_the_name_header_must_match_the_tool(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    params = {"name": "transport_echo", "arguments": {"text": "z"}}
    assert (await mcp.modern("tools/call", params, headers={"Mcp-Name": "transport_write"})).error[
        "code"
    ] == -32020
    assert (await mcp.modern("tools/call", params, headers={"Mcp-Name": ""})).status == 400


async def test_the_name_header_may_be_base64_wrapped(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    wrapped = "=?base64?" + base64.b64encode(b"transport_echo").decode() + "?="
    reply = await mcp.modern(
        "tools/call", {"name": "transport_echo", "arguments": {"text": "ok"}}, headers={"Mcp-Name": wrapped}
    )
    assert reply.result["content"][0]["text"] == "ok"


async def test_resources_read_checks_the_uri_header(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    good = await mcp.modern("resources/read", {"uri": "test://static-text"})
    assert good.result["contents"][0]["text"].startswith("This is the content")
    wire.validate_server_result("resources/read", MODERN, good.result)
    bad = await mcp.modern(
        "resources/read", {"uri": "test://static-text"}, headers={"Mcp-Name": "test://other"}
    )
    assert bad.status == 400 and bad.error["code"] == -32020


# ---------------------------------------------------------------------------------- methods of the era


@pytest.mark.parametrize(
    "method", ["ping", "logging/setLevel", "initialize", "resources/subscribe", "no/such"]
)
async def test_methods_outside_the_era_are_404_method_not_found(mcp: Mcp, method: str) -> None:
    reply = await mcp.modern(method, {"level": "info"} if method == "logging/setLevel" else None)
    assert reply.status == 404
    assert reply.error["code"] == -32601


async def test_notifications_are_acknowledged(mcp: Mcp) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    reply = await mcp.post(body, headers={"MCP-Protocol-Version": MODERN})
    assert reply.status == 202 and reply.response.content == b""


async def test_posted_responses_and_batches_are_invalid_requests(mcp: Mcp) -> None:
    headers = {"MCP-Protocol-Version": MODERN}
    response = await mcp.post({"jsonrpc": "2.0", "id": 1, "result": {}}, headers=headers)
    assert response.status == 400 and response.error["code"] == -32600
    batch = await mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], headers=headers)
    assert batch.status == 400 and batch.error["code"] == -32600


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_get_and_delete_are_405(mcp: Mcp, method: str) -> None:
    response = await mcp.http.request(method, "/mcp", headers=mcp.headers({"MCP-Protocol-Version": MODERN}))
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"


# ------------------------------------------------------------------------------------------- streaming


async def test_logs_stream_only_at_the_level_the_request_asks_for(
    mcp: Mcp, test_tools: dict[str, Tool]
) -> None:
    quiet = await mcp.modern("tools/call", {"name": "transport_chatty", "arguments": {}})
    assert not quiet.is_sse
    chatty = await mcp.modern(
        "tools/call",
        {"name": "transport_chatty", "arguments": {}},
        meta={"io.modelcontextprotocol/logLevel": "debug"},
    )
    assert chatty.is_sse
    logs = [m["params"]["data"] for m in chatty.messages() if m.get("method") == "notifications/message"]
    assert logs == ["a debug line", "a warning line"]
    assert chatty.message["result"]["resultType"] == "complete"


async def test_progress_streams_with_the_requests_token(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    reply = await mcp.modern(
        "tools/call", {"name": "transport_chatty", "arguments": {}}, meta={"progressToken": 99}
    )
    progress = [m["params"] for m in reply.messages() if m.get("method") == "notifications/progress"]
    assert progress == [
        {"progressToken": 99, "progress": 1, "total": 2},
        {"progressToken": 99, "progress": 2, "total": 2},
    ]


async def test_the_server_cannot_ask_the_client_in_this_era(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    reply = await mcp.modern(
        "tools/call",
        {"name": "test_sampling", "arguments": {"prompt": "hi"}},
        meta={"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}},
    )
    assert reply.result["isError"] is True
    assert "2026-07-28" in reply.text()
