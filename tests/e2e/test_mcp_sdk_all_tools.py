"""The official `mcp` SDK client calls every knowledge-base tool against a running server, in both modes.

`mode="legacy"` (initialize handshake, a session) and the default negotiation (2026-07-28, stateless).
The token has the `suggest` role, so the write tools are listed and work; each mode changes different
documents, so the two runs never see each other's edits. Results are checked by their text.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .relay import Relay

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

DEMO = Path(__file__).resolve().parents[2] / "lensrelay" / "demo_vault"
TIMEOUT = 30.0
ALL_TOOLS = {
    "read",
    "glob",
    "grep",
    "get_links",
    "search",
    "read_metadata",
    "property_search",
    "info",
    "get_url",
    "validate_content",
    "edit",
    "multi_edit",
    "write",
    "move",
    "delete",
    "list_suggestions",
}
WRITE_TOOLS = {"edit", "multi_edit", "write", "move", "delete"}


@dataclass(frozen=True)
class Targets:
    """The documents one mode changes, and what it changes in them."""

    mode: str
    edit_path: str
    old: str
    new: str
    created: str
    move_from: str
    move_to: str
    deleted: str


TARGETS = {
    "legacy": Targets(
        mode="legacy",
        edit_path="Lens/Glossary.md",
        old="the cell's energy currency",
        new="the cell's main energy currency",
        created="Lens/SDK legacy.md",
        move_from="Lens/Reading List.md",
        move_to="Lens/Notes/Reading List.md",
        deleted="Lens/Notes/Archive/Old Syllabus.md",
    ),
    "auto": Targets(
        mode="auto",
        edit_path="Lens/Chloroplast.md",
        old="A leaf cell holds",
        new="A single leaf cell holds",
        created="Lens/SDK auto.md",
        move_from="Lens/Mitochondria.md",
        move_to="Lens/Notes/Mitochondria.md",
        deleted="Lens/Notes/Questions.md",
    ),
}
VERSIONS = {"legacy": "2025-11-25", "auto": "2026-07-28"}


@pytest.fixture(scope="module")
def token(relay: Relay) -> str:
    relay.setup(imports=[(DEMO, "Lens")])
    return relay.tokens["suggest"]


@asynccontextmanager
async def connect(relay: Relay, token: str, mode: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{relay.http_url}/mcp", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


class Caller:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, name: str, arguments: dict[str, Any]) -> str:
        """The text of a successful call; a failed one fails the test with the server's words."""
        result = await self.client.call_tool(name, arguments)
        text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
        assert result.is_error is False, f"{name}({arguments}) failed: {text}"
        assert text, f"{name} answered no text"
        return text


def demo_line(name: str, number: int) -> str:
    return (DEMO / name).read_text().splitlines()[number - 1]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_every_tool_answers_through_the_sdk(relay: Relay, token: str, mode: str) -> None:
    targets = TARGETS[mode]
    async with connect(relay, token, mode) as client:
        assert client.session.protocol_version == VERSIONS[mode]
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) >= ALL_TOOLS
        for name in ALL_TOOLS:
            annotations = tools[name].annotations
            assert tools[name].description and annotations is not None, name
            assert annotations.read_only_hint is (name not in WRITE_TOOLS), name
        call = Caller(client)

        # ---- reading
        text = await call.ok("read", {"file_path": "Lens/Welcome.md", "offset": 8, "limit": 2})
        assert text.splitlines()[:2] == [f"{n:>6}\t{demo_line('Welcome.md', n)}" for n in (8, 9)]

        text = await call.ok("glob", {"pattern": "*.md", "path": "Lens/Notes"})
        assert sorted(text.splitlines()) == [
            "Lens/Notes/Ideas.md",
            "Lens/Notes/Lab Journal.md",
            "Lens/Notes/Questions.md",
        ]
        everything = (await call.ok("glob", {"pattern": "**/*.md", "path": "Lens"})).splitlines()

        text = await call.ok("grep", {"pattern": "光合作用", "output_mode": "content"})
        path, number, line = text.splitlines()[0].split(":", 2)
        assert path == "Lens/Über Photosynthese.md" and "光合作用" in line
        assert line == demo_line("Über Photosynthese.md", int(number))

        text = await call.ok("get_links", {"file_path": "Lens/Photosynthesis.md"})
        backlinks, _, forward = text.partition("Forward links (documents this links to):")
        assert "- Lens/Welcome.md" in backlinks and "- Lens/Chloroplast.md" in forward
        assert "[[Calvin Cycle]]" in forward  # unresolved

        text = await call.ok("search", {"query": "mitochondria", "limit": 5})
        assert re.match(r"\d+ results:", text)
        assert "## Mitochondria (Lens/Mitochondria.md)" in text and "**" in text  # highlighted snippet

        text = await call.ok("read_metadata", {"file_path": "Lens/Study Plan.md"})
        metadata = json.loads(text)
        assert metadata["path"] == "Lens/Study Plan.md"
        assert metadata["frontmatter"]["hours_per_week"] == 6 and metadata["stats"]["words"] > 0

        text = await call.ok("property_search", {"properties": {"tags": ["exam"], "status": "draft"}})
        assert [match["path"] for match in json.loads(text)["matches"]] == ["Lens/Study Plan.md"]

        text = await call.ok("info", {})
        assert "role: suggest" in text and f"Lens/ ({len(everything)} documents)" in text

        text = await call.ok("get_url", {"file_path": "Lens/Welcome.md", "line": 8})
        link = text.splitlines()[0]
        assert re.search(r"/admin/suggestions/suggestion/document/[^/]+/edit/#L8$", link)
        # No public address is configured: the link is on the address this client reached the server at.
        assert link.startswith(f"{relay.http_url}/admin/"), link

        text = await call.ok("validate_content", {"file_path": "Lens/Photosynthesis.md"})
        assert "L25: link: [[Calvin Cycle]] resolves to no note you can see" in text
        text = await call.ok("validate_content", {"content": "ok {++added"})
        assert "opens an addition that is never closed" in text

        # ---- proposing changes
        await call.ok("read", {"file_path": targets.edit_path})
        text = await call.ok(
            "edit", {"file_path": targets.edit_path, "old_string": targets.old, "new_string": targets.new}
        )
        assert text.startswith(f"Edited {targets.edit_path}: replaced") and "CriticMarkup" in text
        after = await call.ok("read", {"file_path": targets.edit_path})
        assert targets.new in after and "[Pending suggestions]" in after

        text = await call.ok(
            "multi_edit",
            {
                "file_path": targets.edit_path,
                "edits": [{"old_string": "published", "new_string": "reviewed"}],
                "dry_run": True,
            },
        )
        assert text.startswith(f"Dry run of {targets.edit_path}: 1 edit(s) would replace"), text
        assert "-status: published" in text and "+status: reviewed" in text
        assert "status: published" in await call.ok("read", {"file_path": targets.edit_path})

        text = await call.ok("write", {"file_path": targets.created, "content": f"# Made by {mode}\n"})
        assert text.startswith(f"Created {targets.created}") and "suggestion" in text
        assert f"# Made by {mode}" in await call.ok("read", {"file_path": targets.created})

        text = await call.ok("move", {"file_path": targets.move_from, "new_path": targets.move_to})
        assert text.startswith(f"Suggested moving {targets.move_from} -> {targets.move_to}")

        # Notes link to it: refused, naming them, until forced.
        refused = await call.client.call_tool("delete", {"file_path": targets.deleted})
        assert refused.is_error and "still link to it" in str(refused.content), refused
        text = await call.ok("delete", {"file_path": targets.deleted, "comment": "superseded", "force": True})
        assert text.startswith(f"Suggested deleting {targets.deleted}")

        text = await call.ok("list_suggestions", {"status": "pending"})
        for kind, where in (
            ("edit", targets.edit_path),
            ("create", targets.created),
            ("move", f"{targets.move_from} -> {targets.move_to}"),
            ("delete", targets.deleted),
        ):
            assert re.search(rf"PENDING {kind} {re.escape(where)}\b", text), (kind, where, text)

        # ---- resources, through the same client
        resources = await client.list_resources()
        uris = {str(resource.uri) for resource in resources.resources}
        assert "lens://Lens/Welcome.md" in uris
        read = await client.read_resource("lens://Lens/Welcome.md")
        [content] = read.contents
        assert isinstance(content, types.TextResourceContents)
        assert content.text == (DEMO / "Welcome.md").read_text()


async def test_the_edit_tools_refuse_a_document_not_yet_read(relay: Relay, token: str) -> None:
    for mode in ("legacy", "auto"):
        async with connect(relay, token, mode) as client:
            result = await client.call_tool(
                "edit", {"file_path": "Lens/Cell Theory.md", "old_string": "cork", "new_string": "bark"}
            )
            assert result.is_error is True
            [block] = result.content
            assert isinstance(block, types.TextContent) and "must read" in block.text


async def test_info_reports_the_version_the_handshake_announces(relay: Relay, token: str) -> None:
    async with connect(relay, token, "legacy") as client:
        announced = client.session.server_info
        result = await client.call_tool("info", {})
    assert announced is not None
    [block] = result.content
    assert isinstance(block, types.TextContent)
    assert block.text.splitlines()[0] == f"Lens Relay {announced.version}"
