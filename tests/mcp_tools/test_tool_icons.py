"""Tool icons (`Tool.icons`, MCP 2025-11-25 and later): every listed tool carries one, a self-contained SVG
data URI that says whether it reads, proposes a change a person decides, or discusses; the listing stays
valid for the official SDK's schema; older protocol versions get none; the SVGs hold no script or link."""

from __future__ import annotations

import base64
from typing import Any
from xml.etree import ElementTree

import pytest
from mcp_types import methods as wire

from tests.mcp_tools.test_transport_support import HANDSHAKE, MODERN, Mcp

pytestmark = pytest.mark.django_db(transaction=True)


def svg_of(icon: dict[str, Any]) -> ElementTree.Element:
    prefix = "data:image/svg+xml;base64,"
    assert icon["src"].startswith(prefix) and icon["mimeType"] == "image/svg+xml"
    return ElementTree.fromstring(base64.b64decode(icon["src"][len(prefix) :]))


async def test_each_tool_has_an_icon_for_what_it_does(mcp: Mcp) -> None:
    session = await mcp.initialize(HANDSHAKE)
    result = (await mcp.request("tools/list", session=session, version=HANDSHAKE)).result
    wire.validate_server_result("tools/list", HANDSHAKE, result)
    icons = {tool["name"]: tool["icons"] for tool in result["tools"]}
    assert all(len(found) == 1 for found in icons.values()), icons
    kinds = {name: found[0]["src"] for name, found in icons.items()}
    assert kinds["read"] == kinds["grep"] == kinds["glob"] != kinds["edit"]
    assert kinds["edit"] == kinds["write"] == kinds["delete"] != kinds["comment"]
    assert kinds["comment"] == kinds["reply"] == kinds["list_threads"]
    for found in icons.values():
        svg = svg_of(found[0])
        assert svg.tag == "{http://www.w3.org/2000/svg}svg"
        tags = {element.tag.split("}")[-1] for element in svg.iter()}
        assert tags <= {"svg", "path"}  # nothing that runs or loads
        assert not any("href" in key for element in svg.iter() for key in element.attrib)


async def test_the_stateless_era_lists_them_too(mcp: Mcp) -> None:
    result = (await mcp.modern("tools/list")).result
    wire.validate_server_result("tools/list", MODERN, result)
    assert all(tool["icons"] for tool in result["tools"])


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
async def test_older_versions_list_no_icons(mcp: Mcp, version: str) -> None:
    session = await mcp.initialize(version)
    result = (await mcp.request("tools/list", session=session, version=version)).result
    wire.validate_server_result("tools/list", version, result)
    assert not any("icons" in tool for tool in result["tools"])
