"""Structured results: the JSON-shaped tools declare an `outputSchema` and answer `structuredContent` that
validates against it, with `resource_link` items naming the notes they list, for every protocol version
that has them; a 2025-03-26 client gets the same text and nothing it would not know."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lensrelay.vault.importexport import import_vault
from mcp_tools.resources.documents import document_uri
from tests.mcp_tools.test_transport_support import Mcp

pytestmark = pytest.mark.django_db(transaction=True)

DEMO = Path(__file__).resolve().parents[3] / "lensrelay" / "demo_vault"
STRUCTURED = {
    "info": {},
    "read_metadata": {"file_path": "Lens/Welcome.md"},
    "glob": {"pattern": "**/*.md"},
    "get_links": {"file_path": "Lens/Photosynthesis.md"},
    "property_search": {"properties": {"tags": "biology"}},
    "list_suggestions": {},
    "list_threads": {},
    "search": {"query": "photosynthesis"},
}
LISTING = {"glob", "get_links", "read_metadata", "search"}


@pytest.fixture
async def demo(store: Any, transactional_db: None) -> None:
    await import_vault(store=store, root=DEMO, folder_name="Lens")


async def _tools(mcp: Mcp, call: Any) -> dict[str, dict[str, Any]]:
    listed = (await call("tools/list", {})).result["tools"]
    return {tool["name"]: tool for tool in listed}


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
async def test_structured_results_validate_against_their_schemas(demo: None, mcp: Mcp, version: str) -> None:
    if version == "2026-07-28":

        async def call(method: str, params: dict[str, Any]) -> Any:
            return await mcp.modern(method, params)
    else:
        session = await mcp.initialize(version)

        async def call(method: str, params: dict[str, Any]) -> Any:
            return await mcp.request(method, params, session=session, version=version)

    tools = await _tools(mcp, call)
    for name, arguments in STRUCTURED.items():
        schema = tools[name]["outputSchema"]
        assert schema["type"] == "object", name
        result = (await call("tools/call", {"name": name, "arguments": arguments})).result
        assert result["isError"] is False, (name, result)
        jsonschema.validate(result["structuredContent"], schema)
        [text, *links] = result["content"]
        assert text["type"] == "text" and text["text"]
        if name in LISTING:
            assert links, name
        for link in links:
            assert link["type"] == "resource_link" and link["uri"].startswith("lens://")
            assert link["uri"] == document_uri(link["name"]) and link["name"].endswith(".md")
    # Text-only tools say nothing of a schema.
    assert "outputSchema" not in tools["read"] and "outputSchema" not in tools["grep"]


async def test_the_structured_answer_says_what_the_text_says(demo: None, mcp: Mcp) -> None:
    session = await mcp.initialize("2025-11-25")
    answer = (
        await mcp.request(
            "tools/call", {"name": "glob", "arguments": {"pattern": "Lens/*.md"}}, session=session
        )
    ).result
    paths = answer["structuredContent"]["paths"]
    assert answer["content"][0]["text"].splitlines() == paths
    assert [link["name"] for link in answer["content"][1:]] == paths
    info = (await mcp.request("tools/call", {"name": "info", "arguments": {}}, session=session)).result
    assert info["structuredContent"]["folders"][0]["name"] == "Lens"
    assert f"({info['structuredContent']['folders'][0]['documents']} documents)" in info["content"][0]["text"]


async def test_a_2025_03_26_client_gets_text_alone(demo: None, mcp: Mcp) -> None:
    session = await mcp.initialize("2025-03-26")
    listed = (await mcp.request("tools/list", {}, session=session, version="2025-03-26")).result["tools"]
    assert all("outputSchema" not in tool for tool in listed)
    result = (
        await mcp.request(
            "tools/call",
            {"name": "glob", "arguments": {"pattern": "**/*.md"}},
            session=session,
            version="2025-03-26",
        )
    ).result
    assert "structuredContent" not in result and [c["type"] for c in result["content"]] == ["text"]


async def test_a_failed_structured_tool_is_an_error_without_data(demo: None, mcp: Mcp) -> None:
    session = await mcp.initialize("2025-11-25")
    result = (
        await mcp.request(
            "tools/call",
            {"name": "read_metadata", "arguments": {"file_path": "Other/../Lens/x.md"}},
            session=session,
        )
    ).result
    assert result["isError"] is True and "structuredContent" not in result
