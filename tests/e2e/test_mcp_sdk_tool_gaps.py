"""Tool behaviours that match the Rust server, end to end through the official `mcp` SDK client.

An `edit` whose old_string spans (or quotes) a person's `{>>comment<<}` is made, the comment kept
byte-identical where it is; an editor accepts one such suggestion and rejects another in the admin over
HTTP, and the comment is there after both. A view token cannot suggest, and a comment the document does
not hold is refused with nothing written.

`write` of a new `.html` or `.canvas` file is a pending suggestion that creates the file only when an
editor accepts it in the admin (HTML as live text without markup, the canvas with Relay's type); a
rejected `.json` leaves nothing. Invalid JSON (refused with the parser's position), Windows-illegal names,
`..`, an unknown folder, a body over the request limit and a view token are refused with nothing suggested.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from .relay import Relay
from .test_mcp_sdk_all_tools import connect
from .test_mcp_sdk_files import call, uid_of
from .test_moves import _MARKER, _SETUP_SCRIPT, EDITOR, PASSWORD, decide_in_the_admin

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

COMMENT = "{>>check the colour<<}"
FOX = f"The quick brown{COMMENT} fox jumps.\n"
CAT = f"A sleepy{COMMENT} cat naps.\n"


@dataclass(frozen=True)
class Vault:
    relay: Relay
    token: str  # suggest, every folder
    view: str


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Vault:
    root: Path = tmp_path_factory.mktemp("lens")
    (root / "Fox.md").write_text(FOX)
    (root / "Cat.md").write_text(CAT)
    relay.setup(imports=[(root, "Lens")])
    out = relay.manage(
        "shell", "-c", _SETUP_SCRIPT.format(username=EDITOR, password=PASSWORD, marker=_MARKER)
    )
    assert _MARKER + "ok" in out
    return Vault(relay=relay, token=relay.tokens["suggest"], view=relay.tokens["view"])


async def raw_text(vault: Vault, path: str) -> str:
    doc_id = await vault.relay.doc_id(vault.token, folder="Lens", path=path)
    return await vault.relay.doc_text(doc_id, token=vault.token)


async def test_edit_across_a_persons_comment_keeps_it_through_accept_and_reject(vault: Vault) -> None:
    async with connect(vault.relay, vault.token, "auto") as client:
        await call(client, "read", {"file_path": "Lens/Fox.md"})
        await call(client, "read", {"file_path": "Lens/Cat.md"})
        fox, error = await call(
            client,
            "edit",
            {
                "file_path": "Lens/Fox.md",
                "old_string": f"quick brown{COMMENT} fox",
                "new_string": "slow red fox",
            },
        )
        assert not error, fox
        cat, error = await call(
            client, "edit", {"file_path": "Lens/Cat.md", "old_string": "sleepy cat", "new_string": "busy dog"}
        )
        assert not error, cat
    assert (await raw_text(vault, "/Fox.md")).count(COMMENT) == 1
    await decide_in_the_admin(vault.relay, uid_of(fox), decision="accept")
    await decide_in_the_admin(vault.relay, uid_of(cat), decision="reject")
    assert await raw_text(vault, "/Fox.md") == f"The slow red{COMMENT} fox jumps.\n"
    assert await raw_text(vault, "/Cat.md") == CAT


async def test_comment_edits_refused_for_a_view_token_and_for_comments_not_held(vault: Vault) -> None:
    async with connect(vault.relay, vault.view, "auto") as client:
        await call(client, "read", {"file_path": "Lens/Cat.md"})
        text, error = await call(
            client, "edit", {"file_path": "Lens/Cat.md", "old_string": "sleepy cat", "new_string": "x"}
        )
        assert error and "role view" in text
    async with connect(vault.relay, vault.token, "auto") as client:
        await call(client, "read", {"file_path": "Lens/Cat.md"})
        text, error = await call(
            client,
            "edit",
            {"file_path": "Lens/Cat.md", "old_string": "sleepy{>>forged<<} cat", "new_string": "x cat"},
        )
        assert error and "'{>>'" in text
    assert await raw_text(vault, "/Cat.md") == CAT


async def test_write_creates_html_and_json_files_on_accept_only(vault: Vault) -> None:
    page, data = "<p>Light <b>board</b></p>\n", '{"nodes": [], "edges": []}\n'
    async with connect(vault.relay, vault.token, "auto") as client:
        html, error = await call(client, "write", {"file_path": "Lens/Pages/page.html", "content": page})
        assert not error, html
        board, error = await call(client, "write", {"file_path": "Lens/plan.canvas", "content": data})
        assert not error, board
        dropped, error = await call(client, "write", {"file_path": "Lens/dropped.json", "content": data})
        assert not error, dropped
        _, error = await call(client, "read", {"file_path": "Lens/Pages/page.html"})
        assert error  # nothing exists while pending
        await decide_in_the_admin(vault.relay, uid_of(html), decision="accept")
        await decide_in_the_admin(vault.relay, uid_of(board), decision="accept")
        await decide_in_the_admin(vault.relay, uid_of(dropped), decision="reject")
        read, error = await call(client, "read", {"file_path": "Lens/Pages/page.html"})
        assert not error and "<b>board</b>" in read
        read, error = await call(client, "read", {"file_path": "Lens/plan.canvas"})
        assert not error and '"edges"' in read
        listed, _ = await call(client, "glob", {"pattern": "Lens/**/*.{html,canvas,json}"})
        assert sorted(listed.splitlines()) == ["Lens/Pages/page.html", "Lens/plan.canvas"]
    # HTML is live text with no markup; the canvas keeps Relay's type in the folder document.
    assert await raw_text(vault, "/Pages/page.html") == page
    folder_doc = await vault.relay.folder_doc_id(vault.token, folder="Lens")
    filemeta = await vault.relay.doc_map(folder_doc, token=vault.token, name="filemeta_v0")
    assert filemeta["/plan.canvas"]["type"] == "canvas" and filemeta["/Pages/page.html"]["type"] == "file"


async def test_write_of_new_files_refused_with_nothing_suggested(vault: Vault) -> None:
    async with connect(vault.relay, vault.token, "auto") as client:
        for path, content, expected in [
            ("Lens/bad.json", '{"a": 1,}', "line 1 column 9"),
            ("Lens/a|b.json", "{}", "Windows"),
            ("Lens/../Other/x.json", "{}", "Error"),
            ("Nowhere/x.html", "<p>", "Folder not found"),
        ]:
            text, error = await call(client, "write", {"file_path": path, "content": content})
            assert error and expected in text, (path, text)
        with pytest.raises(Exception):  # noqa: B017  (the transport refuses the body: 413)
            await call(
                client, "write", {"file_path": "Lens/huge.json", "content": '"' + "x" * 5_000_000 + '"'}
            )
    async with connect(vault.relay, vault.view, "auto") as client:
        text, error = await call(client, "write", {"file_path": "Lens/v.json", "content": "{}"})
        assert error and "role view" in text
    async with connect(vault.relay, vault.token, "auto") as client:
        listed, _ = await call(client, "glob", {"pattern": "Lens/**/*.json"})
        assert listed.strip() in ("", "No files found") or "bad.json" not in listed
        pending, _ = await call(client, "list_suggestions", {})
        for name in ("bad.json", "huge.json", "v.json", "x.html"):
            assert name not in pending
