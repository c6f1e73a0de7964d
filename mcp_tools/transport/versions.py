"""Protocol versions this server speaks, and what the server says about itself."""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Any

from mcp_tools.tool_icons import ICON_VERSIONS

if TYPE_CHECKING:
    from django.http import HttpRequest

# Reached through `initialize` and a session.
HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
# Stateless: every request carries its version and client details in `_meta`.
MODERN_VERSIONS = ("2026-07-28",)
SUPPORTED_VERSIONS = (*HANDSHAKE_VERSIONS, *MODERN_VERSIONS)
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]
# What a handshake-era request without an MCP-Protocol-Version header is taken to speak.
DEFAULT_HEADERLESS_VERSION = "2025-03-26"
# JSON-RPC batches were dropped after 2025-03-26.
BATCH_VERSIONS = frozenset({"2025-03-26"})
# Elicitation arrived in 2025-06-18.
ELICITATION_VERSIONS = frozenset({"2025-06-18", "2025-11-25"})

# `_meta` keys of the 2026-07-28 era, as `mcp_types` defines them (a test pins them; importing it
# builds every model of both eras).
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_META_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"

SERVER_NAME = "lens-relay"
SERVER_TITLE = "Lens Relay"
INSTRUCTIONS = (
    "Lens Relay serves a shared Markdown knowledge base (Obsidian-style vaults). Paths look like "
    "`Folder/sub/Note.md`. Find documents with glob, grep and search, and read them with read (cat -n "
    "numbering); every change you propose becomes a suggestion that a human editor accepts or rejects."
)


def server_version() -> str:
    try:
        return metadata.version("lens-relay")
    except metadata.PackageNotFoundError:
        return "0.1.0"


# The server's identity, like its tools, may carry icons (`Implementation.icons`) since 2025-11-25.
# The icon its pages use (`/favicon.ico` redirects to it): scalable, so one size fits all.
SERVER_ICON = "lensrelay/favicon.svg"


def server_info(protocol_version: str | None = None, *, request: HttpRequest | None = None) -> dict[str, Any]:
    """Who answers. For a protocol version that has the field, `icons` names the favicon by absolute URL
    (LENSRELAY_PUBLIC_URL, else the address `request` came in on); left out when no address is known."""
    info: dict[str, Any] = {"name": SERVER_NAME, "title": SERVER_TITLE, "version": server_version()}
    if protocol_version in ICON_VERSIONS:
        icons = server_icons(request)
        if icons:
            info["icons"] = icons
    return info


def server_icons(request: HttpRequest | None = None) -> list[dict[str, Any]]:
    """The server's icon as MCP's `Icon` states it, at an absolute URL, or nothing when the server's address
    is unknown (a path is no URI a client could load)."""
    from urllib.parse import urljoin, urlsplit

    from django.conf import settings
    from django.core.exceptions import DisallowedHost
    from django.templatetags.static import static

    src = static(SERVER_ICON)
    if not urlsplit(src).scheme:  # STATIC_URL may name another host already
        base = str(getattr(settings, "LENSRELAY_PUBLIC_URL", "") or "").rstrip("/")
        if not base and request is not None:
            try:
                base = request.build_absolute_uri("/").rstrip("/")
            except DisallowedHost:
                base = ""
        if not base:
            return []
        src = urljoin(base + "/", src)
    return [{"src": src, "mimeType": "image/svg+xml", "sizes": ["any"]}]


def negotiate(requested: Any) -> str:
    """The handshake answer: the client's version when we speak it, else our latest."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE_VERSION
