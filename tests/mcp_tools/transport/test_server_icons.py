"""The server's identity carries its icon (`serverInfo.icons`, MCP 2025-11-25 and later): the favicon its
pages use, at an absolute URL, for the protocol versions that have the field only."""

from __future__ import annotations

from typing import Any

import pytest
from django.templatetags.static import static
from mcp_types import methods as wire

from mcp_tools.transport.versions import server_info
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp
from tests.mcp_tools.transport.test_handshake import initialize_body

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_INFO = "io.modelcontextprotocol/serverInfo"
ICON_PATH = "/static/lensrelay/favicon.svg"


async def test_initialize_names_the_favicon_at_the_requests_address(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = ""
    result = (await mcp.post(initialize_body(HANDSHAKE))).result
    wire.validate_server_result("initialize", HANDSHAKE, result)
    assert result["serverInfo"]["icons"] == [
        {"src": f"http://localhost{ICON_PATH}", "mimeType": "image/svg+xml", "sizes": ["any"]}
    ]
    assert static("lensrelay/favicon.svg") == ICON_PATH


async def test_the_configured_address_wins(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = "https://relay.example.org/"
    result = (await mcp.post(initialize_body(HANDSHAKE))).result
    assert result["serverInfo"]["icons"][0]["src"] == f"https://relay.example.org{ICON_PATH}"


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
async def test_older_versions_get_no_icons(mcp: Mcp, version: str, settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = "https://relay.example.org"
    result = (await mcp.post(initialize_body(version))).result
    assert result["protocolVersion"] == version
    assert "icons" not in result["serverInfo"]
    assert result["serverInfo"]["name"] == "lens-relay"


async def test_a_host_outside_allowed_hosts_gets_no_icon_and_no_error(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = ""
    reply = await mcp.post(initialize_body(HANDSHAKE), headers={"Host": "evil.example.com"})
    if reply.status == 200:
        assert "icons" not in reply.result["serverInfo"]
        assert "evil.example.com" not in reply.response.text
    else:
        assert 400 <= reply.status < 500


async def test_discovery_names_the_icon_when_the_address_is_configured(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = "https://relay.example.org"
    result = (await mcp.modern("server/discover")).result
    wire.validate_server_result("server/discover", "2026-07-28", result)
    assert result["_meta"][SERVER_INFO]["icons"][0]["src"] == f"https://relay.example.org{ICON_PATH}"
    # Other results keep the short identity.
    listed = (await mcp.modern("tools/list")).result
    assert "icons" not in listed["_meta"][SERVER_INFO]


async def test_discovery_without_an_address_leaves_icons_out(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = ""
    result = (await mcp.modern("server/discover")).result
    assert "icons" not in result["_meta"][SERVER_INFO]
    assert result["_meta"][SERVER_INFO]["name"] == "lens-relay"


def test_server_info_without_a_version_is_the_plain_identity(settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = "https://relay.example.org"
    assert set(server_info()) == {"name", "title", "version"}
    assert server_info("2025-11-25")["icons"][0]["src"].startswith("https://relay.example.org/")


def test_an_absolute_static_url_is_used_as_it_is(settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = ""
    settings.STATIC_URL = "https://cdn.example.net/assets/"
    assert (
        server_info("2026-07-28")["icons"][0]["src"] == "https://cdn.example.net/assets/lensrelay/favicon.svg"
    )


def test_the_icon_is_the_favicon_the_server_has() -> None:
    from django.contrib.staticfiles import finders

    from mcp_tools.transport.versions import SERVER_ICON

    found = finders.find(SERVER_ICON)
    assert found is not None
    with open(str(found), encoding="utf-8") as icon:
        assert "<svg" in icon.read()
