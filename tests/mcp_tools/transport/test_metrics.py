"""tools/call is counted by tool and outcome, and timed (lensrelay_mcp_tool_calls_total and
lensrelay_mcp_tool_call_duration_seconds), through /mcp; names a caller makes up never become labels."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from mcp_tools.registry import Tool
from tests.mcp_tools.test_transport_support import GATE, HANDSHAKE, Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)


def calls(tool: str, outcome: str) -> float:
    return (
        REGISTRY.get_sample_value("lensrelay_mcp_tool_calls_total", {"tool": tool, "outcome": outcome}) or 0.0
    )


def timed(tool: str) -> float:
    return REGISTRY.get_sample_value("lensrelay_mcp_tool_call_duration_seconds_count", {"tool": tool}) or 0.0


def labels_seen(value: str) -> bool:
    return any(
        value in sample.labels.values()
        for family in REGISTRY.collect()
        if family.name.startswith("lensrelay_mcp")
        for sample in family.samples
    )


async def test_each_outcome_is_counted_under_its_tool(
    mcp: Mcp, test_tools: dict[str, Tool], tokens: TokenFactory
) -> None:
    session = await mcp.initialize()
    outcomes = [
        ("transport_echo", {"text": "a"}, "transport_echo", "ok"),
        ("transport_echo", {"text": "a"}, "transport_echo", "ok"),
        ("transport_echo", {"nope": 1}, "transport_echo", "error"),  # bad arguments
        ("transport_fail", {}, "transport_fail", "error"),
        ("transport_crash", {}, "transport_crash", "internal_error"),
        ("made_up_tool_name_123", {}, "unknown", "unknown_tool"),
    ]
    before = {(label, outcome): calls(label, outcome) for _, _, label, outcome in outcomes}
    before_timed = timed("transport_echo")
    for name, arguments, _, _ in outcomes:
        reply = await mcp.request("tools/call", {"name": name, "arguments": arguments}, session=session)
        assert reply.status == 200
    grown = {key: calls(*key) - value for key, value in before.items()}
    assert grown == {
        ("transport_echo", "ok"): 2,
        ("transport_echo", "error"): 1,
        ("transport_fail", "error"): 1,
        ("transport_crash", "internal_error"): 1,
        ("unknown", "unknown_tool"): 1,
    }
    assert timed("transport_echo") - before_timed == 3
    assert not labels_seen("made_up_tool_name_123")

    # A view token may not use a write tool: counted as forbidden, under the tool's name.
    viewer = Mcp(mcp.http, await tokens("view"))
    view_session = await viewer.initialize()
    forbidden = calls("transport_write", "forbidden")
    reply = await viewer.request(
        "tools/call", {"name": "transport_write", "arguments": {}}, session=view_session
    )
    assert reply.result["isError"] is True
    assert calls("transport_write", "forbidden") - forbidden == 1


async def test_a_call_the_client_cancels_is_counted_as_cancelled(
    mcp: Mcp, test_tools: dict[str, Tool]
) -> None:
    session = await mcp.initialize()
    before = calls("transport_wait", "cancelled")
    call = asyncio.ensure_future(
        mcp.request("tools/call", {"name": "transport_wait", "arguments": {}}, session=session, request_id=78)
    )
    await asyncio.wait_for(GATE["wait"].started.wait(), 10)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 78}}
    assert (await mcp.post(cancel, session=session, version=HANDSHAKE)).status == 202
    reply = await asyncio.wait_for(call, 10)
    assert reply.error["code"] == -32800
    assert calls("transport_wait", "cancelled") - before == 1
    assert calls("transport_wait", "internal_error") == 0
