"""Importing into a running server: the official `mcp` client and y-websocket clients see the result.

A few hundred notes are imported by `manage.py import_vault` (another process) into a folder the server
already serves; a re-import with one changed note and one new note must reach a client connected to
that note live, leave clients on unchanged notes alone (their documents are not even loaded by the
importer), and be answered by MCP `read`, `grep` and `search` without a restart.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .conftest import YClientFactory
from .relay import Relay, poll, tree

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

FOLDER = "Big"
NOTES = 300
TIMEOUT = 30.0


def note(index: int) -> str:
    return (
        f"---\nid: {index}\ntags: [bulk]\n---\n\n# Note {index:04d}\n\n"
        f"Body of note {index} with café, 東京 and 🙂; see [[Note {(index + 1) % NOTES:04d}]].\r\n"
    )


def relative(index: int) -> str:
    return f"Area {index % 7}/Sub {index % 3}/Note {index:04d}.md"


def write_vault(root: Path) -> None:
    for index in range(NOTES):
        path = root / relative(index)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(note(index).encode())


def counts(output: str) -> dict[str, int]:
    return {word: int(n) for n, word in re.findall(r"(\d+) (created|updated|unchanged)", output)}


@asynccontextmanager
async def mcp_client(relay: Relay, token: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{relay.http_url}/mcp", http_client=http)
        async with Client(transport, mode="legacy") as client:
            yield client


async def call(client: Client, name: str, arguments: dict[str, object]) -> str:
    result = await client.call_tool(name, arguments)
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    assert result.is_error is False, f"{name}({arguments}) failed: {text}"
    return text


async def test_a_reimport_reaches_live_clients_and_mcp_and_round_trips(
    relay: Relay, yclients: YClientFactory, tmp_path: Path
) -> None:
    token = relay.tokens["edit"]
    vault = tmp_path / "vault"
    write_vault(vault)
    first = await relay.aimport_vault(vault, folder=FOLDER)
    assert counts(first) == {"created": NOTES, "updated": 0, "unchanged": 0}, first

    exported = tmp_path / "export"
    await relay.aexport_vault(folder=FOLDER, path=exported)
    assert tree(exported) == tree(vault)  # byte for byte, CRLF and Unicode included

    changed, untouched = 17, 18
    changed_id = await relay.doc_id(token, folder=FOLDER, path="/" + relative(changed))
    untouched_id = await relay.doc_id(token, folder=FOLDER, path="/" + relative(untouched))
    watcher = await yclients(relay.doc_url(changed_id), changed_id, params={"token": token})
    bystander = await yclients(relay.doc_url(untouched_id), untouched_id, params={"token": token})
    assert await watcher.text() == note(changed)
    assert await bystander.text() == note(untouched)

    async with mcp_client(relay, token) as client:
        read = await call(client, "read", {"file_path": f"{FOLDER}/{relative(changed)}"})
        assert f"Body of note {changed} " in read  # the server now holds its caches

        new_text = note(changed).replace("Body of", "Re-imported zebrafinch body of")
        (vault / relative(changed)).write_bytes(new_text.encode())
        (vault / "Area 0" / "Fresh arrival.md").write_bytes(b"# Fresh\n\nquokkalantern appears.\n")
        again = await relay.aimport_vault(vault, folder=FOLDER)
        assert counts(again) == {"created": 1, "updated": 1, "unchanged": NOTES - 1}, again

        # the connected client gets the change live; the other one's document is untouched
        assert await watcher.wait_text(equals=new_text, timeout=5.0) == new_text
        assert await bystander.text() == note(untouched)

        async def read_changed() -> str:
            return await call(client, "read", {"file_path": f"{FOLDER}/{relative(changed)}"})

        await poll(read_changed, lambda text: "zebrafinch" in text, timeout=10.0, what="MCP read")

        async def read_new() -> str:
            result = await client.call_tool("read", {"file_path": f"{FOLDER}/Area 0/Fresh arrival.md"})
            return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))

        await poll(read_new, lambda text: "quokkalantern" in text, timeout=10.0, what="MCP read, new note")
        grep = await call(client, "grep", {"pattern": "zebrafinch|quokkalantern", "path": FOLDER})
        assert sorted(grep.splitlines()) == sorted(
            [f"{FOLDER}/{relative(changed)}", f"{FOLDER}/Area 0/Fresh arrival.md"]
        )

        async def search() -> str:
            return await call(client, "search", {"query": "quokkalantern OR zebrafinch", "path": FOLDER})

        found = await poll(
            search, lambda text: "Fresh arrival" in text and f"Note {changed:04d}" in text, what="search"
        )
        assert found.startswith("2 results")

    again_export = tmp_path / "export-again"
    await relay.aexport_vault(folder=FOLDER, path=again_export)
    assert tree(again_export) == tree(vault)
