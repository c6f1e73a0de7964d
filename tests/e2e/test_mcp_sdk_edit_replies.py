"""`edit` and `multi_edit` answer in one style through the official `mcp` SDK client: a first sentence
(`Edited …`, `Dry run of …`, `Error: …`) then labelled details; a refused multi_edit names the failing
edit, gives a recovery hint, and writes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

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
PATH = "Lens/Glossary.md"


@pytest.fixture(scope="module")
def token(relay: Relay) -> str:
    relay.setup(imports=[(DEMO, "Lens")])
    return relay.tokens["suggest"]


@asynccontextmanager
async def connect(relay: Relay, token: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30.0)
    async with http, Client(streamable_http_client(f"{relay.http_url}/mcp", http_client=http)) as client:
        yield client


async def call(client: Client, name: str, arguments: dict[str, object]) -> tuple[str, bool]:
    result = await client.call_tool(name, arguments)
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    return text, bool(result.is_error)


async def test_edit_and_multi_edit_answer_alike(relay: Relay, token: str) -> None:
    async with connect(relay, token) as client:
        await check_replies(relay, token, client)


async def check_replies(relay: Relay, token: str, client: Client) -> None:
    doc_id = await relay.doc_id(token, folder="Lens", path="Glossary.md")
    before = await relay.doc_text(doc_id, token=token)
    await call(client, "read", {"file_path": PATH})
    edits: list[dict[str, object]] = [
        {"old_string": "green pigment", "new_string": "main green pigment"},
        {"old_string": "no such sentence anywhere", "new_string": "x"},
        {"old_string": "electron carrier", "new_string": "electron shuttle"},
    ]

    # A failing edit in the middle: named, with its recovery hint, and nothing written.
    text, error = await call(client, "multi_edit", {"file_path": PATH, "edits": edits})
    assert error
    first, unchanged, hint = text.splitlines()
    assert first.startswith(f"Error: Edit 2 of 3 failed: String to replace not found in {PATH}.")
    assert unchanged == "No edit was applied; the document is unchanged."
    assert hint == (
        "Recovery: Read the document to see its current content, then retry with the exact old_string."
    )
    assert await relay.doc_text(doc_id, token=token) == before
    # The single edit refuses in the same words.
    text, error = await call(
        client, "edit", {"file_path": PATH, "old_string": "no such sentence anywhere", "new_string": "x"}
    )
    assert error and text.splitlines() == [
        f"Error: String to replace not found in {PATH}. Make sure old_string matches the text exactly as "
        "read shows it (whitespace and line breaks included).",
        "No edit was applied; the document is unchanged.",
        "Recovery: Read the document to see its current content, then retry with the exact old_string.",
    ]

    # A dry run: the per-edit report, the diff, the resulting content; still nothing written.
    good = [edits[0], edits[2]]
    text, error = await call(
        client, "multi_edit", {"file_path": PATH, "edits": good, "dry_run": True, "include_content": True}
    )
    assert not error, text
    head, _, rest = text.partition("\n\n")
    assert head == (
        f"Dry run of {PATH}: 2 edit(s) would replace 29 characters. Nothing was changed and no suggestion "
        "was made."
    )
    report, diff, content = rest.split("\n\n", 2)
    assert report.splitlines() == [
        "Edits:",
        "- 1 of 2: 'green pigment' matched, 1 occurrence replaced",
        "- 2 of 2: 'electron carrier' matched, 1 occurrence replaced",
    ]
    assert diff.startswith("Diff:\n") and "-The green pigment" in diff and "+The main green pigment" in diff
    assert content.startswith("Resulting content (as if accepted):\n---\n")
    assert "An electron shuttle made" in content
    assert await relay.doc_text(doc_id, token=token) == before

    # Success: multi_edit's first line is edit's, then the per-edit report.
    text, error = await call(client, "multi_edit", {"file_path": PATH, "edits": good})
    assert not error, text
    head, _, report = text.partition("\n\n")
    assert head.startswith(f"Edited {PATH}: replaced 29 characters with CriticMarkup suggestion for human ")
    assert "(suggestion " in head and ", pending; 2 hunks: " in head
    assert report.splitlines()[0] == "Edits:" and len(report.splitlines()) == 3
    after = await relay.doc_text(doc_id, token=token)
    assert "@@main ++}green pigment" in after and "@@shuttle++} made" in after, after

    text, error = await call(
        client, "edit", {"file_path": PATH, "old_string": "reflects green", "new_string": "reflects it"}
    )
    assert not error and "\n" not in text
    assert text.startswith(f"Edited {PATH}: replaced 14 characters with CriticMarkup suggestion for human ")
