"""Files that are not notes, end to end through the official `mcp` SDK client against a running server.

A vault with a PNG, a JSON file, a canvas and notes embedding them is imported with `import_vault`; the
assistant lists, reads and greps them, suggests an edit of the JSON that an editor accepts (or rejects)
in the admin over HTTP, and moves the image, after which the note embedding it embeds it at its new path.
A token limited to one folder sees nothing of another folder's files through any tool.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from .relay import Relay, TokenSpec
from .test_mcp_sdk_all_tools import Caller, connect
from .test_moves import _MARKER, _SETUP_SCRIPT, EDITOR, PASSWORD, accept_in_the_admin, decide_in_the_admin

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(200))
CONFIG = '{\n  "name": "lens",\n  "version": 1\n}\n'
CANVAS = '{"nodes":[{"id":"n1","type":"text","text":"Light reactions board"}],"edges":[]}\n'
LENS: dict[str, bytes] = {
    "Figures.md": b"# Figures\n![[diagram.png|300]] and the board [[plan.canvas]]\n",
    "Notes/Light.md": b"See ![[../Assets/diagram.png]].\n",
    "Assets/diagram.png": PNG,
    "Data/config.json": CONFIG.encode(),
    "Boards/plan.canvas": CANVAS.encode(),
}
OTHER: dict[str, bytes] = {
    "Private/secret.json": b'{"secret": "Light reactions board"}\n',
    "Hidden.md": b"x\n",
}


@dataclass(frozen=True)
class Vault:
    relay: Relay
    token: str  # suggest, every folder
    lens_only: str  # suggest, Lens alone


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Vault:
    lens = _write(tmp_path_factory.mktemp("lens"), LENS)
    other = _write(tmp_path_factory.mktemp("other"), OTHER)
    created = relay.setup(
        imports=[(lens, "Lens"), (other, "Other")],
        tokens={"lens-only": TokenSpec("suggest", ("Lens",))},
    )
    out = relay.manage(
        "shell", "-c", _SETUP_SCRIPT.format(username=EDITOR, password=PASSWORD, marker=_MARKER)
    )
    assert _MARKER + "ok" in out
    return Vault(relay=relay, token=relay.tokens["suggest"], lens_only=created["lens-only"])


async def call(client: Client, name: str, arguments: dict[str, object]) -> tuple[str, bool]:
    result = await client.call_tool(name, arguments)
    text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
    return text, bool(result.is_error)


def uid_of(text: str) -> str:
    found = re.search(r"\(suggestion ([0-9a-f]+), pending", text)
    assert found, text
    return found.group(1)


async def test_files_through_the_sdk_list_read_grep_and_edit(vault: Vault) -> None:
    async with connect(vault.relay, vault.token, "auto") as client:
        tools = Caller(client)
        listed = (await tools.ok("glob", {"pattern": "Lens/**/*.{png,json,canvas}"})).splitlines()
        assert sorted(listed) == [
            "Lens/Assets/diagram.png",
            "Lens/Boards/plan.canvas",
            "Lens/Data/config.json",
        ]
        described = await tools.ok("read", {"file_path": "Lens/Assets/diagram.png"})
        assert described == (
            "Lens/Assets/diagram.png is a binary file; its content is not shown.\n"
            "Type: image (image/png)\n"
            f"Size: {len(PNG):,} bytes\n"
            f"SHA-256: {hashlib.sha256(PNG).hexdigest()}\n"
            "Linked from:\n- Lens/Figures.md\n- Lens/Notes/Light.md"
        )
        shown = await tools.ok("read", {"file_path": "Lens/Data/config.json"})
        assert shown == '     1\t{\n     2\t  "name": "lens",\n     3\t  "version": 1\n     4\t}'
        found = await tools.ok(
            "grep", {"pattern": "Light reactions", "output_mode": "content", "path": "Lens"}
        )
        assert found == f"Lens/Boards/plan.canvas:1:{CANVAS.strip()}"

        # an edit that would break the JSON is refused, nothing recorded
        text, error = await call(
            client, "edit", {"file_path": "Lens/Data/config.json", "old_string": "}", "new_string": "},"}
        )
        assert error and text.startswith("Error: the change would make Lens/Data/config.json invalid JSON")

        # edit -> pending row, file unchanged -> reject in the admin -> still unchanged
        edited = await tools.ok(
            "edit",
            {
                "file_path": "Lens/Data/config.json",
                "old_string": '"version": 1',
                "new_string": '"version": 2',
            },
        )
        # the change page shows the replacement as a diff of the file's text
        shows = "Replace the content of Lens/Data/config.json"
        await decide_in_the_admin(vault.relay, uid_of(edited), decision="reject", page_shows=shows)
        assert await tools.ok("read", {"file_path": "Lens/Data/config.json"}) == shown

        # edit -> accept in the admin -> the blob changed, and read shows the new JSON
        edited = await tools.ok(
            "edit",
            {
                "file_path": "Lens/Data/config.json",
                "old_string": '"version": 1',
                "new_string": '"version": 3',
            },
        )
        message = await accept_in_the_admin(vault.relay, uid_of(edited))
        assert "ccepted" in message, message
        after = await tools.ok("read", {"file_path": "Lens/Data/config.json"})
        assert after == '     1\t{\n     2\t  "name": "lens",\n     3\t  "version": 3\n     4\t}'
        assert "[Pending suggestions]" not in after
    # the stored bytes changed too: what a Relay client downloads through the folder entry's hash
    edit = vault.relay.tokens["edit"]
    folder_doc = await vault.relay.folder_doc_id(edit, folder="Lens")
    entry = (await vault.relay.doc_map(folder_doc, token=edit, name="filemeta_v0"))["/Data/config.json"]
    new = CONFIG.replace('"version": 1', '"version": 3')
    assert entry["hash"] == hashlib.sha256(new.encode()).hexdigest() and json.loads(new)["version"] == 3


async def test_moving_an_image_rewrites_the_notes_embedding_it(vault: Vault) -> None:
    async with connect(vault.relay, vault.token, "legacy") as client:
        tools = Caller(client)
        moved = await tools.ok(
            "move", {"file_path": "Lens/Assets/diagram.png", "new_path": "Lens/Media/Figure 1.png"}
        )
        message = await accept_in_the_admin(vault.relay, uid_of(moved))
        assert "2 links rewritten" in message, message
        figures = await tools.ok("read", {"file_path": "Lens/Figures.md"})
        assert figures == "     1\t# Figures\n     2\t![[Figure 1.png|300]] and the board [[plan.canvas]]"
        light = await tools.ok("read", {"file_path": "Lens/Notes/Light.md"})
        assert light == "     1\tSee ![[../Media/Figure 1.png]]."
        links = await tools.ok("get_links", {"file_path": "Lens/Media/Figure 1.png"})
        assert links.startswith(
            "Backlinks (documents linking to this):\n- Lens/Figures.md\n- Lens/Notes/Light.md"
        )
        text, error = await call(client, "read", {"file_path": "Lens/Assets/diagram.png"})
        assert error and "not found" in text


async def test_a_folder_token_sees_no_other_folders_files_in_any_tool(vault: Vault) -> None:
    async with connect(vault.relay, vault.lens_only, "auto") as client:
        tools = Caller(client)
        assert "Other/" not in await tools.ok("glob", {"pattern": "**/*"})
        assert "secret" not in await tools.ok("grep", {"pattern": "Light reactions"})
        for name, arguments in [
            ("read", {"file_path": "Other/Private/secret.json"}),
            ("get_links", {"file_path": "Other/Private/secret.json"}),
            ("grep", {"pattern": "secret", "path": "Other"}),
            ("glob", {"pattern": "*", "path": "Other"}),
            ("edit", {"file_path": "Other/Private/secret.json", "old_string": "secret", "new_string": "x"}),
            ("write", {"file_path": "Other/Private/secret.json", "content": "{}"}),
            ("move", {"file_path": "Other/Private/secret.json", "new_path": "Lens/secret.json"}),
        ]:
            text, error = await call(client, name, arguments)
            assert error, (name, text)
            assert "Light reactions" not in text, (name, text)
