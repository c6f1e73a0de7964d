"""The tools a caller is offered: the registry's text tools, plus "rich" tools that build their own MCP
result (images, audio, embedded resources, requests to the client), which only the conformance fixtures
need. Fixture tools are offered only while LENSRELAY_MCP_CONFORMANCE_FIXTURES is on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from lensrelay.access.auth import Access
from mcp_tools.registry import REGISTRY, Tool

if TYPE_CHECKING:
    from mcp_tools.transport.context import CallScope

RichHandler = Callable[["CallScope", dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class RichTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    # Returns a whole CallToolResult (`content`, optionally `isError`, `structuredContent`).
    handler: RichHandler
    title: str | None = None
    read_only: bool = True
    fixture: bool = False

    def definition(self, protocol_version: str | None = None) -> dict[str, Any]:
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {"readOnlyHint": self.read_only, "openWorldHint": False},
        }
        if self.title:
            definition["title"] = self.title
        return definition

    def available_to(self, access: Access) -> bool:
        return self.read_only or access.can_suggest


RICH_TOOLS: dict[str, RichTool] = {}

AnyTool = Tool | RichTool


def register_rich_tool(tool: RichTool) -> RichTool:
    if tool.name in RICH_TOOLS or tool.name in REGISTRY:
        raise RuntimeError(f"tool {tool.name!r} registered twice")
    RICH_TOOLS[tool.name] = tool
    return tool


def fixtures_enabled() -> bool:
    return bool(getattr(settings, "LENSRELAY_MCP_CONFORMANCE_FIXTURES", False))


def _offered(tool: AnyTool, fixtures: bool) -> bool:
    if tool.fixture and not fixtures:
        return False
    return not isinstance(tool, Tool) or tool.offered_when()


def offered_tools() -> list[AnyTool]:
    """Every tool this server configuration offers, before the caller's role is considered."""
    fixtures = fixtures_enabled()
    tools: list[AnyTool] = [*REGISTRY.values(), *RICH_TOOLS.values()]
    return [tool for tool in tools if _offered(tool, fixtures)]


def tools_for(access: Access) -> list[AnyTool]:
    """The tools `tools/list` shows this caller: a view token sees no write tools."""
    return [tool for tool in offered_tools() if tool.available_to(access)]


def find_tool(name: str) -> AnyTool | None:
    tool: AnyTool | None = REGISTRY.get(name) or RICH_TOOLS.get(name)
    if tool is None or not _offered(tool, fixtures_enabled()):
        return None
    return tool
