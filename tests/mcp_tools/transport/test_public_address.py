"""A tool learns the address the caller reached this server at (`ToolContext.public_base`), in both
protocol eras: LENSRELAY_PUBLIC_URL when set, else the request's host, and never a host Django refuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tools.registry import REGISTRY, Tool, ToolContext
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp, NoArgs

pytestmark = pytest.mark.django_db(transaction=True)


async def _address(ctx: ToolContext, args: NoArgs) -> str:
    return repr(ctx.public_base)


@pytest.fixture(autouse=True)
def address_tool() -> Iterator[None]:
    REGISTRY["transport_address"] = Tool(
        name="transport_address", title="address", description="Test tool.", args=NoArgs, handler=_address
    )
    try:
        yield
    finally:
        REGISTRY.pop("transport_address", None)


async def _handshake_answer(mcp: Mcp, headers: dict[str, str] | None = None) -> str:
    session = await mcp.initialize(HANDSHAKE)
    body = {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "transport_address"}}
    reply = await mcp.post(body, session=session, version=HANDSHAKE, headers=headers)
    return str(reply.result["content"][0]["text"])


async def _modern_answer(mcp: Mcp, headers: dict[str, str] | None = None) -> str:
    reply = await mcp.modern("tools/call", {"name": "transport_address", "arguments": {}}, headers=headers)
    return str(reply.result["content"][0]["text"])


ERAS = [_handshake_answer, _modern_answer]


@pytest.mark.parametrize("answer", ERAS, ids=["handshake", "stateless"])
async def test_the_request_address_reaches_the_tool(mcp: Mcp, settings: Any, answer: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = ""
    assert await answer(mcp) == repr("http://localhost")
    settings.ALLOWED_HOSTS = ["localhost", "relay.internal"]
    assert await answer(mcp, {"Host": "relay.internal:8443"}) == repr("http://relay.internal:8443")


@pytest.mark.parametrize("answer", ERAS, ids=["handshake", "stateless"])
async def test_the_configured_address_wins(mcp: Mcp, settings: Any, answer: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = "https://relay.example.org/"
    assert await answer(mcp) == repr("https://relay.example.org")


@pytest.mark.parametrize("answer", ERAS, ids=["handshake", "stateless"])
async def test_a_forged_host_never_reaches_a_link(mcp: Mcp, settings: Any, answer: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = ""
    assert await answer(mcp, {"Host": "evil.example.com"}) == repr(None)
