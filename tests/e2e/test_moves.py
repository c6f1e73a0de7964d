"""Moves end to end: an assistant proposes them through the official `mcp` client, an editor accepts them in
the admin over HTTP, and real y-websocket clients of the folder and content documents see the result:
folder entries for new sub-folders, the same content document under its new path (in another folder too),
and links that still resolve (checked with `get_links`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from .conftest import YClientFactory
from .relay import Relay, poll
from .test_mcp_sdk_all_tools import Caller, connect

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

EDITOR, PASSWORD = "move-editor", "correct horse battery staple"
_MARKER = "E2E-MOVES "
_SETUP_SCRIPT = """
from django.contrib.auth.models import Permission, User
user = User.objects.create_user({username!r}, password={password!r}, is_staff=True)
user.user_permissions.set(Permission.objects.filter(codename__in=["review_suggestion", "view_suggestion"]))
print({marker!r} + "ok")
"""
_PK_SCRIPT = """
from suggestions.models import Suggestion
print({marker!r} + str(Suggestion.objects.get(uid={uid!r}).pk))
"""
LENS = {
    "Welcome.md": "# Welcome\n[[Notes/Ideas]] · [[Topics/Cells]] · [[Projects/Plan]]\n",
    "Notes/Ideas.md": "[[../Welcome]] and [[../../Lens Edu/Syllabus|syllabus]]\n",
    "Topics/Cells.md": "[[../Welcome#Top|home]] [[./Energy]]\n",
    "Topics/Energy.md": "[[Cells]] [[../Notes/Ideas]]\n",
    "Projects/Plan.md": "[[../Welcome#Top|home]] [[../Topics/Cells]]\n",
}
EDU = {"Syllabus.md": "[[../Lens/Projects/Plan]] [[Lens/Topics/Energy#Why|energy]]\n"}


@dataclass(frozen=True)
class Vaults:
    relay: Relay
    token: str  # suggest, every folder: the assistant
    edit: str  # for the y-websocket observers and /api


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def vaults(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Vaults:
    lens = _write(tmp_path_factory.mktemp("lens"), LENS)
    edu = _write(tmp_path_factory.mktemp("edu"), EDU)
    relay.setup(imports=[(lens, "Lens"), (edu, "Lens Edu")])
    out = relay.manage(
        "shell", "-c", _SETUP_SCRIPT.format(username=EDITOR, password=PASSWORD, marker=_MARKER)
    )
    assert _MARKER + "ok" in out
    return Vaults(relay=relay, token=relay.tokens["suggest"], edit=relay.tokens["edit"])


async def propose(vaults: Vaults, arguments: dict[str, str]) -> str:
    """Propose through the MCP endpoint with the official client; returns the suggestion's uid."""
    async with connect(vaults.relay, vaults.token, "legacy") as client:
        text = await Caller(client).ok("move", arguments)
    found = re.search(r"\(suggestion ([0-9a-f]+), pending\)", text)
    assert found, text
    return found.group(1)


async def accept_in_the_admin(relay: Relay, uid: str) -> str:
    """Sign in to the admin and press Accept, over plain HTTP; returns the admin's message."""
    return await decide_in_the_admin(relay, uid, decision="accept")


async def decide_in_the_admin(relay: Relay, uid: str, *, decision: str, page_shows: str = "") -> str:
    """Sign in to the admin and press Accept or Reject (``decision``) on the suggestion's change page,
    which must show ``page_shows``; returns the admin's message."""
    out = relay.manage("shell", "-c", _PK_SCRIPT.format(uid=uid, marker=_MARKER))
    pk = next(line for line in out.splitlines() if line.startswith(_MARKER))[len(_MARKER) :]
    async with httpx.AsyncClient(base_url=relay.http_url, timeout=30, follow_redirects=True) as http:
        login = await http.get("/admin/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
        assert csrf, login.text
        signed_in = await http.post(
            "/admin/login/?next=/admin/",
            data={"username": EDITOR, "password": PASSWORD, "csrfmiddlewaretoken": csrf.group(1)},
        )
        assert signed_in.url.path == "/admin/", signed_in.text
        page = await http.get(f"/admin/suggestions/suggestion/{pk}/change/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert csrf and "suggestion-accept" in page.text and page_shows in page.text, page.text
        decided = await http.post(
            f"/admin/suggestions/suggestion/{pk}/decide/",
            data={"decision": decision, "csrfmiddlewaretoken": csrf.group(1)},
        )
    message = re.search(r'<li class="success">(.*?)</li>', decided.text, re.S)
    assert message, (
        re.findall(r'<li class="(?:error|warning)">(.*?)</li>', decided.text, re.S) or decided.text
    )
    return message.group(1)


async def get_links(vaults: Vaults, path: str) -> str:
    async with connect(vaults.relay, vaults.token, "auto") as client:
        return await Caller(client).ok("get_links", {"file_path": path})


def forward_links(text: str) -> list[str]:
    section = text.split("Forward links (documents this links to):\n")[1].split("\n\n")[0]
    return [line[2:] for line in section.splitlines()]


async def folder_client(vaults: Vaults, yclients: YClientFactory, folder: str, label: str):  # type: ignore[no-untyped-def]
    doc_id = await vaults.relay.folder_doc_id(vaults.edit, folder=folder)
    return await yclients(vaults.relay.doc_url(doc_id), doc_id, params={"token": vaults.edit}, label=label)


async def test_a_note_moved_to_the_folder_root_keeps_its_relative_links(
    vaults: Vaults, yclients: YClientFactory
) -> None:
    relay = vaults.relay
    doc_id = await relay.doc_id(vaults.edit, folder="Lens", path="/Notes/Ideas.md")
    note = await yclients(relay.doc_url(doc_id), doc_id, params={"token": vaults.edit}, label="note")
    uid = await propose(vaults, {"file_path": "Lens/Notes/Ideas.md", "new_path": "Lens/Ideas.md"})
    assert "links rewritten" in await accept_in_the_admin(relay, uid)
    # the connected client of the same content document sees its links re-relativised
    await note.wait_text(equals="[[./Welcome]] and [[../Lens Edu/Syllabus|syllabus]]\n")
    assert await relay.doc_id(vaults.edit, folder="Lens", path="/Ideas.md") == doc_id
    shown = await get_links(vaults, "Lens/Ideas.md")
    assert "Unresolved" not in shown
    assert forward_links(shown) == ["Lens Edu/Syllabus.md", "Lens/Welcome.md"]
    assert "- Lens/Welcome.md" in shown.split("Forward links")[0]  # Welcome's link followed the move


async def test_a_sub_folder_renamed_with_everything_in_it(vaults: Vaults, yclients: YClientFactory) -> None:
    relay = vaults.relay
    observer = await folder_client(vaults, yclients, "Lens", "lens-folder")
    before = await observer.get_map("filemeta_v0")
    assert before["/Topics"]["type"] == "folder"
    uid = await propose(vaults, {"file_path": "Lens/Topics", "new_path": "Lens/Archive/Topics 2026"})
    await accept_in_the_admin(relay, uid)
    await observer.wait_map("filemeta_v0", "/Topics/Cells.md", present=False)
    await observer.wait_map("filemeta_v0", "/Archive/Topics 2026/Cells.md", value=before["/Topics/Cells.md"])
    filemeta = await observer.get_map("filemeta_v0")
    assert filemeta["/Archive"]["type"] == "folder" and filemeta["/Archive"]["version"] == 0
    assert filemeta["/Archive/Topics 2026"] == before["/Topics"]  # the folder's own entry, moved
    assert filemeta["/Archive/Topics 2026/Energy.md"] == before["/Topics/Energy.md"]
    assert not [key for key in filemeta if key == "/Topics" or key.startswith("/Topics/")]
    docs = await observer.get_map("docs")
    assert docs["/Archive/Topics 2026/Cells.md"] == before["/Topics/Cells.md"]["id"]
    cells = await get_links(vaults, "Lens/Archive/Topics 2026/Cells.md")
    assert "Unresolved" not in cells
    assert forward_links(cells) == ["Lens/Archive/Topics 2026/Energy.md", "Lens/Welcome.md"]
    energy = await get_links(vaults, "Lens/Archive/Topics 2026/Energy.md")
    assert "Unresolved" not in energy
    assert "- Lens Edu/Syllabus.md" in energy.split("Forward links")[0]  # a link from another folder
    welcome = await get_links(vaults, "Lens/Welcome.md")
    assert "Lens/Archive/Topics 2026/Cells.md" in forward_links(welcome) and "Unresolved" not in welcome


async def test_a_note_moves_into_another_folder_as_the_same_document(
    vaults: Vaults, yclients: YClientFactory
) -> None:
    relay = vaults.relay
    lens = await folder_client(vaults, yclients, "Lens", "lens-folder")
    edu = await folder_client(vaults, yclients, "Lens Edu", "edu-folder")
    meta = (await lens.get_map("filemeta_v0"))["/Projects/Plan.md"]
    doc_id = await relay.doc_id(vaults.edit, folder="Lens", path="/Projects/Plan.md")
    plan = await yclients(relay.doc_url(doc_id), doc_id, params={"token": vaults.edit}, label="plan")
    uid = await propose(vaults, {"file_path": "Lens/Projects/Plan.md", "new_path": "Lens Edu/Week 1/Plan.md"})
    await accept_in_the_admin(relay, uid)
    await edu.wait_map("filemeta_v0", "/Week 1/Plan.md", value=meta)
    await lens.wait_map("filemeta_v0", "/Projects/Plan.md", present=False)
    edu_meta = await edu.get_map("filemeta_v0")
    assert edu_meta["/Week 1"]["type"] == "folder"
    assert (await edu.get_map("docs"))["/Week 1/Plan.md"] == meta["id"]
    assert "/Projects" in await lens.get_map("filemeta_v0")  # the emptied sub-folder stays
    # the same content document, now listed under the other folder
    listed = await poll(
        lambda: relay.document_paths(vaults.edit, folder="Lens Edu"),
        lambda paths: "Lens Edu/Week 1/Plan.md" in paths,
        timeout=10,
        what="moved document listed",
    )
    assert listed["Lens Edu/Week 1/Plan.md"] == doc_id
    assert "Lens/Projects/Plan.md" not in await relay.document_paths(vaults.edit, folder="Lens")
    text = await plan.text()
    assert text.startswith("[[../../Lens/Welcome#Top|home]] [[../../Lens/")
    shown = await get_links(vaults, "Lens Edu/Week 1/Plan.md")
    assert "Unresolved" not in shown and "Lens/Welcome.md" in forward_links(shown)
    syllabus = await get_links(vaults, "Lens Edu/Syllabus.md")
    assert "Lens Edu/Week 1/Plan.md" in forward_links(syllabus) and "Unresolved" not in syllabus
    assert json.dumps(edu_meta, ensure_ascii=False).count(meta["id"]) == 1
