"""Resources (provider registry, paging across providers, read, templates), prompts and completion."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp_types import methods as wire

from mcp_tools.registry import ToolContext
from mcp_tools.resources.providers import PROVIDERS, Resources, register_resource_provider
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp

pytestmark = pytest.mark.django_db(transaction=True)


class NumberedResources:
    """`count` resources `num://{prefix}/{i}`, `page` per page; readable only by tokens that may suggest."""

    def __init__(self, prefix: str, count: int, page: int) -> None:
        self.prefix, self.count, self.page = prefix, count, page

    async def list(self, ctx: ToolContext, cursor: str | None) -> tuple[Resources, str | None]:
        start = int(cursor or 0)
        end = min(start + self.page, self.count)
        items = [{"uri": f"num://{self.prefix}/{i}", "name": f"{self.prefix}-{i}"} for i in range(start, end)]
        return items, (str(end) if end < self.count else None)

    async def read(self, ctx: ToolContext, uri: str) -> Resources | None:
        if not uri.startswith(f"num://{self.prefix}/") or not ctx.access.can_suggest:
            return None
        return [{"uri": uri, "mimeType": "text/plain", "text": f"read by {ctx.session_key[:5]}"}]

    def templates(self) -> Resources:
        return [{"uriTemplate": f"num://{self.prefix}/{{i}}", "name": f"{self.prefix} numbers"}]


@pytest.fixture
def providers(settings: Any) -> Iterator[list[NumberedResources]]:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = False
    saved = list(PROVIDERS)
    added = [NumberedResources("a", 3, 2), NumberedResources("empty", 0, 5), NumberedResources("b", 1, 5)]
    PROVIDERS[:] = added
    try:
        yield added
    finally:
        PROVIDERS[:] = saved


async def all_pages(mcp: Mcp, session: str) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        params = {"cursor": cursor} if cursor else {}
        result = (await mcp.request("resources/list", params, session=session)).result
        wire.validate_server_result("resources/list", HANDSHAKE, result)
        pages.append([item["uri"] for item in result["resources"]])
        cursor = result.get("nextCursor")
        if cursor is None:
            return pages


async def test_resources_page_through_every_provider(mcp: Mcp, providers: list[NumberedResources]) -> None:
    session = await mcp.initialize()
    pages = await all_pages(mcp, session)
    assert pages == [["num://a/0", "num://a/1"], ["num://a/2"], ["num://b/0"]]


async def test_a_bad_cursor_is_invalid_params(mcp: Mcp, providers: list[NumberedResources]) -> None:
    session = await mcp.initialize()
    for cursor in ("garbage", "eyJwIjogOTl9"):
        reply = await mcp.request("resources/list", {"cursor": cursor}, session=session)
        assert reply.error["code"] == -32602


async def test_read_asks_providers_in_turn(mcp: Mcp, providers: list[NumberedResources]) -> None:
    session = await mcp.initialize()
    result = (await mcp.request("resources/read", {"uri": "num://b/0"}, session=session)).result
    wire.validate_server_result("resources/read", HANDSHAKE, result)
    assert result["contents"] == [
        {"uri": "num://b/0", "mimeType": "text/plain", "text": f"read by {session[:5]}"}
    ]


async def test_a_missing_resource_is_resource_not_found(mcp: Mcp, providers: list[NumberedResources]) -> None:
    session = await mcp.initialize()
    reply = await mcp.request("resources/read", {"uri": "num://zzz/1"}, session=session)
    assert reply.error["code"] == -32002
    assert reply.error["data"] == {"uri": "num://zzz/1"}
    stateless = await mcp.modern("resources/read", {"uri": "num://zzz/1"})
    assert stateless.status == 400 and stateless.error["code"] == -32602


async def test_providers_decide_what_a_caller_may_read(
    mcp: Mcp, tokens: Any, providers: list[NumberedResources]
) -> None:
    viewer = Mcp(mcp.http, await tokens("view"))
    session = await viewer.initialize()
    assert (await viewer.request("resources/read", {"uri": "num://a/0"}, session=session)).error[
        "code"
    ] == -32002


async def test_templates_come_from_every_provider(mcp: Mcp, providers: list[NumberedResources]) -> None:
    session = await mcp.initialize()
    result = (await mcp.request("resources/templates/list", session=session)).result
    wire.validate_server_result("resources/templates/list", HANDSHAKE, result)
    assert [t["uriTemplate"] for t in result["resourceTemplates"]] == [
        "num://a/{i}",
        "num://empty/{i}",
        "num://b/{i}",
    ]


def test_register_resource_provider_accepts_classes_and_instances() -> None:
    saved = list(PROVIDERS)
    try:
        register_resource_provider(NumberedResources("x", 1, 1))

        @register_resource_provider
        class Empty:
            async def list(self, ctx: ToolContext, cursor: str | None) -> tuple[Resources, None]:
                return [], None

            async def read(self, ctx: ToolContext, uri: str) -> None:
                return None

            def templates(self) -> Resources:
                return []

        assert isinstance(PROVIDERS[-1], Empty)
        with pytest.raises(TypeError):
            register_resource_provider(object())
    finally:
        PROVIDERS[:] = saved


# -------------------------------------------------------------------------------- conformance fixtures


async def test_fixture_resources_only_in_the_test_configuration(mcp: Mcp, settings: Any) -> None:
    session = await mcp.initialize()
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = False
    listed = (await mcp.request("resources/list", session=session)).result["resources"]
    assert not any(item["uri"].startswith("test://") for item in listed)
    assert (await mcp.request("resources/read", {"uri": "test://static-text"}, session=session)).error
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    uris = set()
    cursor = None
    while True:
        result = (
            await mcp.request("resources/list", {"cursor": cursor} if cursor else {}, session=session)
        ).result
        uris |= {item["uri"] for item in result["resources"]}
        cursor = result.get("nextCursor")
        if not cursor:
            break
    assert {"test://static-text", "test://static-binary", "test://watched-resource"} <= uris


async def test_fixture_template_substitutes_the_id(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    session = await mcp.initialize()
    contents = (
        await mcp.request("resources/read", {"uri": "test://template/123/data"}, session=session)
    ).result
    assert '"id": "123"' in contents["contents"][0]["text"]
    binary = (await mcp.request("resources/read", {"uri": "test://static-binary"}, session=session)).result
    assert binary["contents"][0]["blob"].startswith("iVBORw0KGgo")  # base64 of the PNG signature


async def test_subscribe_and_unsubscribe(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    session = await mcp.initialize()
    assert (
        await mcp.request("resources/subscribe", {"uri": "test://watched-resource"}, session=session)
    ).result == {}
    assert (
        await mcp.request("resources/unsubscribe", {"uri": "test://watched-resource"}, session=session)
    ).result == {}


async def test_prompts_and_completion(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = True
    session = await mcp.initialize()
    listed = (await mcp.request("prompts/list", session=session)).result
    wire.validate_server_result("prompts/list", HANDSHAKE, listed)
    assert "test_prompt_with_arguments" in {prompt["name"] for prompt in listed["prompts"]}

    got = await mcp.request(
        "prompts/get",
        {"name": "test_prompt_with_arguments", "arguments": {"arg1": "A", "arg2": "B"}},
        session=session,
    )
    wire.validate_server_result("prompts/get", HANDSHAKE, got.result)
    assert got.result["messages"][0]["content"]["text"] == "Prompt with arguments: arg1='A', arg2='B'"

    missing = await mcp.request("prompts/get", {"name": "test_prompt_with_arguments"}, session=session)
    assert missing.error["code"] == -32602 and "arg1" in missing.error["message"]
    unknown = await mcp.request("prompts/get", {"name": "nope"}, session=session)
    assert unknown.error["code"] == -32602

    completion = await mcp.request(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
            "argument": {"name": "arg1", "value": "par"},
        },
        session=session,
    )
    wire.validate_server_result("completion/complete", HANDSHAKE, completion.result)
    assert completion.result["completion"]["values"] == ["paris", "park", "party"]


async def test_no_fixture_prompts_outside_the_test_configuration(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_CONFORMANCE_FIXTURES = False
    session = await mcp.initialize()
    listed = (await mcp.request("prompts/list", session=session)).result["prompts"]
    wire.validate_server_result("prompts/list", HANDSHAKE, {"prompts": listed})
    assert [p["name"] for p in listed] == ["review_feedback", "summarize_changes", "fix_broken_links"]
    completion = await mcp.request(
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "test_simple_prompt"}, "argument": {"name": "a", "value": ""}},
        session=session,
    )
    assert completion.result["completion"]["values"] == []
