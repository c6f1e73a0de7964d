"""`_trash` in any spelling is reserved, end to end. An assistant (the official `mcp` SDK client, a
suggest token) writing, editing, moving or deleting under `_TRASH`, `_Trash`, `_TRASH` in fullwidth
letters, `%5Ftrash` or `_trash.` gets a plain tool error naming the rule, and nothing stored changes:
neither the folder document (read by an npm y-websocket client, as Relay clients see it) nor the
suggestions. A Yjs client's own entry under such a spelling is ignored by the server: no tool and no
`/api` listing shows it."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from .conftest import YClientFactory
from .relay import Relay, poll
from .test_mcp_sdk_all_tools import connect
from .yclient import YClient

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

FOLDER = "Public"
NOTES = {"x.md": "# X\n\nThe note.\n", "Linker.md": "# Linker\n\nSee [[x]].\n"}
SPELLINGS = ["_TRASH", "_Trash", "_\uff34\uff32\uff21\uff33\uff28", "%5Ftrash", "_trash.", "_trash"]
_MARKER = "E2E-TRASH-NAMES "
_COUNT_SCRIPT = (
    f"from suggestions.models import Suggestion; print({_MARKER!r} + str(Suggestion.objects.count()))"
)


@dataclass(frozen=True)
class Vault:
    relay: Relay
    assistant: str  # suggest token
    writer: str  # edit token, for the folder document's client
    folder_doc: str


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Vault:
    root = tmp_path_factory.mktemp("public")
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    relay.setup(imports=[(root, FOLDER)])
    writer = relay.tokens["edit"]
    folder_doc = asyncio.run(relay.folder_doc_id(writer, folder=FOLDER))
    return Vault(relay, relay.tokens["suggest"], writer, folder_doc)


async def folder_client(vault: Vault, yclients: YClientFactory, label: str) -> YClient:
    url = vault.relay.doc_url(vault.folder_doc)
    return await yclients(url, vault.folder_doc, params={"token": vault.writer}, label=label)


def suggestion_count(relay: Relay) -> int:
    out = relay.manage("shell", "-c", _COUNT_SCRIPT)
    return int(next(line for line in out.splitlines() if line.startswith(_MARKER))[len(_MARKER) :])


async def call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    result = await client.call_tool(name, arguments)
    text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
    return text, bool(result.is_error)


async def test_an_assistant_cannot_write_or_move_into_any_spelling_of_the_trash(
    vault: Vault, yclients: YClientFactory
) -> None:
    observer = await folder_client(vault, yclients, "observer")
    before = await observer.get_map("filemeta_v0")
    count = suggestion_count(vault.relay)
    async with connect(vault.relay, vault.assistant, "auto") as client:
        await call(client, "read", {"file_path": f"{FOLDER}/x.md"})
        for spelling in SPELLINGS:
            attempts: list[tuple[str, dict[str, Any]]] = [
                ("write", {"file_path": f"{FOLDER}/{spelling}/x.md", "content": "hidden\n"}),
                ("write", {"file_path": f"{FOLDER}/{spelling}", "content": "hidden\n"}),
                ("move", {"file_path": f"{FOLDER}/x.md", "new_path": f"{FOLDER}/{spelling}/x.md"}),
                ("move", {"file_path": f"{FOLDER}/x.md", "new_path": f"{FOLDER}/{spelling}/"}),
                ("edit", {"file_path": f"{FOLDER}/{spelling}/x.md", "old_string": "a", "new_string": "b"}),
                (
                    "multi_edit",
                    {
                        "file_path": f"{FOLDER}/{spelling}/x.md",
                        "edits": [{"old_string": "a", "new_string": "b"}],
                    },
                ),
                ("delete", {"file_path": f"{FOLDER}/{spelling}/x.md"}),
            ]
            for name, arguments in attempts:
                text, error = await call(client, name, arguments)
                assert error, f"{name}({arguments}) was accepted: {text}"
                assert "Internal error" not in text
                assert "'_trash' is reserved for it in every spelling" in text, (name, arguments, text)
                assert text.startswith("Error: "), text
        # The note is where it was, and still readable.
        text, error = await call(client, "read", {"file_path": f"{FOLDER}/x.md"})
        assert not error and "The note." in text
    assert await observer.get_map("filemeta_v0") == before  # the folder document never saw any of it
    assert suggestion_count(vault.relay) == count


async def test_a_clients_entry_under_another_spelling_of_the_trash_is_ignored(
    vault: Vault, yclients: YClientFactory
) -> None:
    plugin = await folder_client(vault, yclients, "plugin")
    hidden = {"id": "2" * 8 + "-2222-4222-8222-" + "2" * 12, "type": "markdown", "version": 0}
    legit = {"id": "3" * 8 + "-3333-4333-8333-" + "3" * 12, "type": "markdown", "version": 0}
    hidden_too = {"id": "4" * 8 + "-4444-4444-8444-" + "4" * 12, "type": "markdown", "version": 0}
    await plugin.transact(
        [
            {"op": "mapSet", "name": "filemeta_v0", "key": "/_TRASH/evil.md", "value": hidden},
            {"op": "mapSet", "name": "filemeta_v0", "key": f"/{SPELLINGS[2]}/evil.md", "value": hidden_too},
        ]
    )
    # A later, legitimate entry: once the server lists it, it has mirrored the folder past the other one.
    await plugin.transact([{"op": "mapSet", "name": "filemeta_v0", "key": "/Legit.md", "value": legit}])
    paths = await poll(
        lambda: vault.relay.document_paths(vault.writer, folder=FOLDER),
        lambda found: f"{FOLDER}/Legit.md" in found,
        timeout=10.0,
        what="Legit.md listed",
    )
    assert not any("evil" in path for path in paths), json.dumps(paths)
    async with connect(vault.relay, vault.assistant, "auto") as client:
        listed, error = await call(client, "glob", {"pattern": f"{FOLDER}/**/*.md"})
        assert not error and "evil" not in listed
        for spelling in SPELLINGS[:3]:
            text, error = await call(client, "read", {"file_path": f"{FOLDER}/{spelling}/evil.md"})
            assert error and "not found" in text.lower(), text
