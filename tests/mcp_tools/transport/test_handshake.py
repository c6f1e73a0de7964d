"""The handshake protocol era: initialize, sessions, ping, logging, batches, notifications, tools, SSE."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from mcp_types import methods as wire

from mcp_tools.callers import memory
from mcp_tools.models import McpSession
from mcp_tools.registry import Tool
from tests.mcp_tools.test_transport_support import BOTH, GATE, HANDSHAKE, Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)


def initialize_body(version: Any, request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "2"},
        },
    }


async def stored(session_id: str) -> McpSession:
    return await McpSession.objects.aget(id=session_id)


# ------------------------------------------------------------------------------------------ initialize


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_initialize_echoes_a_supported_version(mcp: Mcp, version: str) -> None:
    reply = await mcp.post(initialize_body(version))
    result = reply.result
    assert result["protocolVersion"] == version
    wire.validate_server_result("initialize", version, result)
    session = await stored(reply.headers["Mcp-Session-Id"])
    assert session.protocol_version == version
    assert session.client_name == "c" and session.client_version == "2"


@pytest.mark.parametrize("version", ["2024-11-05", "2099-01-01", "draft"])
async def test_initialize_answers_the_latest_for_other_versions(mcp: Mcp, version: str) -> None:
    reply = await mcp.post(initialize_body(version))
    assert reply.result["protocolVersion"] == "2025-11-25"


async def test_initialize_declares_the_server_and_its_capabilities(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = False
    result = (await mcp.post(initialize_body(HANDSHAKE))).result
    assert result["serverInfo"]["name"] == "lens-relay"
    assert result["serverInfo"]["version"]
    assert result["instructions"]
    capabilities = result["capabilities"]
    assert set(capabilities) >= {"tools", "resources", "logging"}
    # Sessions hear of changes on their GET stream (mcp_tools.notifications).
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    capabilities = (await mcp.post(initialize_body(HANDSHAKE))).result["capabilities"]
    assert capabilities["resources"]["subscribe"] is True
    assert "prompts" in capabilities and "completions" in capabilities


async def test_each_initialize_opens_a_new_session(mcp: Mcp) -> None:
    first = (await mcp.post(initialize_body(HANDSHAKE))).headers["Mcp-Session-Id"]
    second = (await mcp.post(initialize_body(HANDSHAKE), session=first)).headers["Mcp-Session-Id"]
    assert first != second
    assert len(first) >= 32 and first.isascii()


async def test_initialize_with_bad_params_is_invalid_params(mcp: Mcp) -> None:
    reply = await mcp.post(initialize_body(20251125, request_id=9))
    assert reply.error["code"] == -32602
    assert reply.message["id"] == 9
    assert "Mcp-Session-Id" not in reply.headers


# -------------------------------------------------------------------------------------------- sessions


async def test_requests_without_a_session_are_400(mcp: Mcp) -> None:
    reply = await mcp.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert reply.status == 400
    assert "Mcp-Session-Id" in reply.error["message"]
    assert reply.message["id"] == 3


async def test_unknown_sessions_are_404(mcp: Mcp) -> None:
    reply = await mcp.request("ping", session="f" * 48)
    assert reply.status == 404


async def test_delete_ends_the_session(mcp: Mcp) -> None:
    session = await mcp.initialize()
    response = await mcp.http.delete("/mcp", headers=mcp.headers({"Mcp-Session-Id": session}))
    assert response.status_code == 200
    assert (await stored(session)).ended_at is not None
    assert (await mcp.request("ping", session=session)).status == 404
    again = await mcp.http.delete("/mcp", headers=mcp.headers({"Mcp-Session-Id": session}))
    assert again.status_code == 404


async def test_delete_without_a_session_is_400(mcp: Mcp) -> None:
    response = await mcp.http.delete("/mcp", headers=mcp.headers())
    assert response.status_code == 400


async def _last_seen(session: str, *, seconds_ago: int) -> None:
    """Make the session look idle that long; like every write to sessions, it drops kept copies."""
    await McpSession.objects.filter(id=session).aupdate(
        last_seen_at=timezone.now() - timedelta(seconds=seconds_ago)
    )
    await sync_to_async(memory.generation_bump)()


async def test_idle_sessions_expire(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_SESSION_IDLE_SECONDS = 60
    session = await mcp.initialize()
    await _last_seen(session, seconds_ago=59)
    assert (await mcp.request("ping", session=session)).status == 200
    # That request counted as activity.
    assert timezone.now() - (await stored(session)).last_seen_at < timedelta(seconds=5)
    await _last_seen(session, seconds_ago=61)
    assert (await mcp.request("ping", session=session)).status == 404


async def test_a_missing_version_header_after_initialize_is_tolerated(mcp: Mcp) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("ping", session=session, version=None)
    assert reply.status == 200 and reply.result == {}


async def test_every_reply_names_its_session(mcp: Mcp) -> None:
    session = await mcp.initialize()
    assert (await mcp.request("ping", session=session)).headers["Mcp-Session-Id"] == session


# --------------------------------------------------------------------------------------- notifications


async def test_notifications_and_replies_are_accepted_with_202(mcp: Mcp) -> None:
    session = await mcp.initialize()
    for body in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": "someone-elses", "result": {}},
        {"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "no"}},
    ):
        reply = await mcp.post(body, session=session, version=HANDSHAKE)
        assert reply.status == 202, body
        assert reply.response.content == b""


async def test_notifications_need_a_session_too(mcp: Mcp) -> None:
    reply = await mcp.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert reply.status == 400


@pytest.mark.parametrize("accept", [BOTH, "application/json"])
async def test_notifications_cancelled_stops_a_running_request(
    mcp: Mcp, test_tools: dict[str, Tool], accept: str
) -> None:
    # With SSE accepted the handler runs in a task of its own; with JSON only, in the request's task.
    session = await mcp.initialize(accept=accept)
    call = asyncio.ensure_future(
        mcp.request(
            "tools/call",
            {"name": "transport_wait", "arguments": {}},
            session=session,
            request_id=77,
            accept=accept,
        )
    )
    await asyncio.wait_for(GATE["wait"].started.wait(), 10)
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 77, "reason": "bored"},
    }
    assert (await mcp.post(cancel, session=session, version=HANDSHAKE)).status == 202
    reply = await asyncio.wait_for(call, 10)
    assert reply.message["id"] == 77
    assert reply.error["code"] == -32800


# --------------------------------------------------------------------------------------- basic methods


async def test_ping_answers_an_empty_result(mcp: Mcp) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("ping", session=session)
    assert reply.result == {}
    assert reply.headers["content-type"].startswith("application/json")


async def test_logging_set_level_is_stored_on_the_session(mcp: Mcp) -> None:
    session = await mcp.initialize()
    assert (await mcp.request("logging/setLevel", {"level": "warning"}, session=session)).result == {}
    assert (await stored(session)).log_level == "warning"
    bad = await mcp.request("logging/setLevel", {"level": "loud"}, session=session)
    assert bad.error["code"] == -32602


async def test_unknown_methods_are_method_not_found(mcp: Mcp) -> None:
    session = await mcp.initialize()
    for method in ("no/such/method", "server/discover", "tasks/list"):
        reply = await mcp.request(method, session=session)
        assert reply.status == 200
        assert reply.error["code"] == -32601
        assert method in reply.error["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1, 2]},
        "ping",
        42,
    ],
)
async def test_malformed_requests_are_invalid_request(mcp: Mcp, body: Any) -> None:
    session = await mcp.initialize()
    reply = await mcp.post(body, session=session, version=HANDSHAKE)
    assert reply.status == 400
    assert reply.error["code"] == -32600


async def test_params_are_validated_per_method(mcp: Mcp) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("tools/call", {"arguments": {}}, session=session)
    assert reply.error["code"] == -32602
    assert "name" in reply.error["message"]
    reply = await mcp.request("resources/read", {}, session=session)
    assert reply.error["code"] == -32602


# --------------------------------------------------------------------------------------------- batches


async def test_batches_work_in_2025_03_26_sessions(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    session = await mcp.initialize("2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "transport_echo", "arguments": {"text": "hi"}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
        {"jsonrpc": "2.0", "id": 4},
    ]
    reply = await mcp.post(batch, session=session, version="2025-03-26")
    assert reply.status == 200
    answers = {message["id"]: message for message in reply.response.json()}
    assert set(answers) == {1, 2, 3, 4}
    assert answers[1]["result"] == {}
    assert answers[2]["result"]["content"][0]["text"] == "hi"
    assert answers[3]["error"]["code"] == -32601
    assert answers[4]["error"]["code"] == -32600


async def test_a_batch_of_notifications_is_202(mcp: Mcp) -> None:
    session = await mcp.initialize("2025-03-26")
    notes = [{"jsonrpc": "2.0", "method": "notifications/initialized"}] * 2
    assert (await mcp.post(notes, session=session, version="2025-03-26")).status == 202


async def test_initialize_cannot_be_batched(mcp: Mcp) -> None:
    session = await mcp.initialize("2025-03-26")
    reply = await mcp.post([initialize_body("2025-03-26", 5)], session=session, version="2025-03-26")
    assert reply.response.json()[0]["error"]["code"] == -32600


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_batches_are_refused_after_2025_03_26(mcp: Mcp, version: str) -> None:
    session = await mcp.initialize(version)
    reply = await mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], session=session, version=version)
    assert reply.status == 400
    assert reply.error["code"] == -32600


async def test_an_empty_batch_is_invalid(mcp: Mcp) -> None:
    session = await mcp.initialize("2025-03-26")
    reply = await mcp.post([], session=session, version="2025-03-26")
    assert reply.status == 400 and reply.error["code"] == -32600


# ----------------------------------------------------------------------------------------------- tools


async def test_tools_list_hides_write_tools_from_view_tokens(
    mcp: Mcp, tokens: TokenFactory, test_tools: dict[str, Tool]
) -> None:
    viewer = Mcp(mcp.http, await tokens("view"))
    view_session = await viewer.initialize()
    names = {
        tool["name"] for tool in (await viewer.request("tools/list", session=view_session)).result["tools"]
    }
    assert "transport_echo" in names and "transport_write" not in names

    for role in ("suggest", "edit", "admin"):
        writer = Mcp(mcp.http, await tokens(role))
        session = await writer.initialize()
        result = (await writer.request("tools/list", session=session)).result
        assert "transport_write" in {tool["name"] for tool in result["tools"]}, role
        wire.validate_server_result("tools/list", HANDSHAKE, result)


async def test_listed_tools_carry_description_schema_and_annotations(
    mcp: Mcp, test_tools: dict[str, Tool]
) -> None:
    session = await mcp.initialize()
    tools = {
        tool["name"]: tool for tool in (await mcp.request("tools/list", session=session)).result["tools"]
    }
    echo = tools["transport_echo"]
    assert echo["description"] == "Test tool transport_echo."
    assert echo["inputSchema"]["type"] == "object"
    assert echo["inputSchema"]["additionalProperties"] is False
    assert echo["inputSchema"]["required"] == ["text"]
    assert echo["annotations"]["readOnlyHint"] is True
    assert tools["transport_write"]["annotations"]["readOnlyHint"] is False


async def test_fixture_tools_are_offered_only_in_the_test_configuration(
    mcp: Mcp, settings: Any, test_tools: dict[str, Tool]
) -> None:
    session = await mcp.initialize()
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = False
    names = {tool["name"] for tool in (await mcp.request("tools/list", session=session)).result["tools"]}
    assert not names & {"transport_fixture_only", "test_simple_text", "test_sampling"}
    called = await mcp.request("tools/call", {"name": "test_simple_text", "arguments": {}}, session=session)
    assert called.result["isError"] is True
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    names = {tool["name"] for tool in (await mcp.request("tools/list", session=session)).result["tools"]}
    assert {"transport_fixture_only", "test_simple_text", "test_sampling"} <= names


async def test_tools_call_returns_text_content(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    session = await mcp.initialize()
    args = {"name": "transport_echo", "arguments": {"text": "ab", "times": 3}}
    reply = await mcp.request("tools/call", args, session=session)
    assert reply.result == {"content": [{"type": "text", "text": "ababab"}], "isError": False}
    wire.validate_server_result("tools/call", HANDSHAKE, reply.result)


async def test_an_unknown_tool_is_an_error_result_listing_the_tools(
    mcp: Mcp, test_tools: dict[str, Tool]
) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("tools/call", {"name": "nonexistent", "arguments": {}}, session=session)
    assert reply.result["isError"] is True
    assert "Unknown tool: nonexistent" in reply.text()
    assert "transport_echo" in reply.text()


async def test_a_view_token_calling_a_write_tool_is_refused(
    mcp: Mcp, tokens: TokenFactory, test_tools: dict[str, Tool]
) -> None:
    viewer = Mcp(mcp.http, await tokens("view"))
    session = await viewer.initialize()
    reply = await viewer.request("tools/call", {"name": "transport_write", "arguments": {}}, session=session)
    assert reply.result["isError"] is True
    assert "role view" in reply.text()
    assert "written" not in reply.text()


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"text": 5}, "'text'"),
        ({}, "missing required argument 'text'"),
        ({"text": "a", "colour": "red"}, "unknown argument 'colour'"),
        ({"text": "a", "times": "many"}, "'times'"),
    ],
)
async def test_bad_arguments_are_an_error_result_with_a_helpful_message(
    mcp: Mcp, test_tools: dict[str, Tool], arguments: dict[str, Any], expected: str
) -> None:
    session = await mcp.initialize()
    reply = await mcp.request(
        "tools/call", {"name": "transport_echo", "arguments": arguments}, session=session
    )
    assert reply.result["isError"] is True
    assert "Invalid arguments for transport_echo" in reply.text()
    assert expected in reply.text()


async def test_tool_errors_are_error_results(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("tools/call", {"name": "transport_fail"}, session=session)
    assert reply.result == {
        "content": [{"type": "text", "text": "Error: this tool failed on purpose."}],
        "isError": True,
    }


async def test_a_crashing_tool_is_a_generic_error_result_and_is_logged(
    mcp: Mcp, test_tools: dict[str, Tool], caplog: pytest.LogCaptureFixture
) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("tools/call", {"name": "transport_crash", "arguments": {}}, session=session)
    assert reply.result["isError"] is True
    assert "Internal error while running transport_crash" in reply.text()
    assert "secret internals" not in reply.response.text
    assert any("transport_crash" in record.getMessage() for record in caplog.records)


async def test_tools_see_the_session_as_their_read_key(mcp: Mcp, test_tools: dict[str, Tool]) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("tools/call", {"name": "transport_whoami", "arguments": {}}, session=session)
    assert json.loads(reply.text()) == {
        "session_key": session,
        "client": "pytest-client",
        "session_id": session,
    }


# ------------------------------------------------------------------------------------------------- SSE


async def test_notifications_from_a_tool_stream_before_its_result(
    mcp: Mcp, test_tools: dict[str, Tool]
) -> None:
    session = await mcp.initialize()
    await mcp.request("logging/setLevel", {"level": "info"}, session=session)
    params = {"name": "transport_chatty", "arguments": {}, "_meta": {"progressToken": "tok-1"}}
    reply = await mcp.request("tools/call", params, session=session)
    assert reply.status == 200 and reply.is_sse
    assert reply.headers["Mcp-Session-Id"] == session
    messages = reply.messages()
    # debug is below the session's level; warning is not.
    assert [m["method"] for m in messages[:-1]] == [
        "notifications/message",
        "notifications/progress",
        "notifications/progress",
    ]
    assert messages[0]["params"] == {"level": "warning", "data": "a warning line"}
    assert messages[1]["params"] == {"progressToken": "tok-1", "progress": 1, "total": 2}
    assert messages[-1]["result"]["content"][0]["text"] == "chatted"


async def test_without_a_level_or_progress_token_nothing_streams(
    mcp: Mcp, test_tools: dict[str, Tool]
) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("tools/call", {"name": "transport_chatty", "arguments": {}}, session=session)
    assert not reply.is_sse
    assert reply.text() == "chatted"


async def test_json_only_clients_get_the_result_without_notifications(
    mcp: Mcp, test_tools: dict[str, Tool]
) -> None:
    session = await mcp.initialize(accept="application/json")
    await mcp.request("logging/setLevel", {"level": "debug"}, session=session, accept="application/json")
    reply = await mcp.request(
        "tools/call",
        {"name": "transport_chatty", "arguments": {}},
        session=session,
        accept="application/json",
    )
    assert not reply.is_sse
    assert len(reply.messages()) == 1
    assert reply.text() == "chatted"


async def test_conformance_logging_fixture_streams_three_messages(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    session = await mcp.initialize()
    await mcp.request("logging/setLevel", {"level": "debug"}, session=session)
    reply = await mcp.request(
        "tools/call", {"name": "test_tool_with_logging", "arguments": {}}, session=session
    )
    notes = [m["params"]["data"] for m in reply.messages() if m.get("method") == "notifications/message"]
    assert notes == ["Tool execution started", "Tool processing data", "Tool execution completed"]


async def test_sampling_without_the_client_capability_is_an_error_result(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    session = await mcp.initialize()
    reply = await mcp.request(
        "tools/call", {"name": "test_sampling", "arguments": {"prompt": "hi"}}, session=session
    )
    assert reply.result["isError"] is True
    assert "sampling" in reply.text()


async def test_sampling_needs_an_event_stream(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    session = await mcp.initialize(capabilities={"sampling": {}}, accept="application/json")
    reply = await mcp.request(
        "tools/call",
        {"name": "test_sampling", "arguments": {"prompt": "hi"}},
        session=session,
        accept="application/json",
    )
    assert reply.result["isError"] is True
    assert "text/event-stream" in reply.text()


async def test_stored_session_keeps_client_capabilities(mcp: Mcp) -> None:
    session = await mcp.initialize(capabilities={"sampling": {}, "elicitation": {"form": {}}})
    row = await stored(session)
    assert row.client_capabilities == {"sampling": {}, "elicitation": {"form": {}}}


async def test_sessions_are_in_the_database_for_every_worker(mcp: Mcp) -> None:
    session = await mcp.initialize()
    assert await sync_to_async(McpSession.objects.filter(id=session, ended_at__isnull=True).exists)()
