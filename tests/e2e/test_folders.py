"""Files created, renamed and deleted by a Yjs client through the folder doc's `filemeta_v0` (as the
Obsidian Relay plugin does) show up in `/api/documents`, whichever side made the change."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import YClientFactory
from .relay import Relay, poll
from .yclient import utf16_len

pytestmark = pytest.mark.e2e

FOLDER = "Team"
EXISTING = "# Existing\n\nImported from disk.\n"
# The mirror into Document rows runs after the folder doc changed; give it a generous bound.
MIRROR_TIMEOUT = 10.0


@dataclass(frozen=True)
class Team:
    relay: Relay
    token: str


@pytest.fixture(scope="module")
def team(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Team:
    vault: Path = tmp_path_factory.mktemp("team-vault")
    (vault / "Notes").mkdir()
    (vault / "Notes" / "Existing.md").write_text(EXISTING, encoding="utf-8")
    out = relay.import_vault(vault, folder=FOLDER)
    assert "1 created" in out and "1 sub-folder," in out, out
    return Team(relay=relay, token=relay.tokens["edit"])


def entry(file_uuid: str, kind: str = "markdown") -> dict[str, Any]:
    return {"id": file_uuid, "type": kind, "version": 0}


def set_ops(path: str, file_uuid: str) -> list[dict[str, Any]]:
    """Add a markdown file the way Relay does: `filemeta_v0` plus the legacy `docs` map."""
    return [
        {"op": "mapSet", "name": "filemeta_v0", "key": path, "value": entry(file_uuid)},
        {"op": "mapSet", "name": "docs", "key": path, "value": file_uuid},
    ]


def delete_ops(path: str) -> list[dict[str, Any]]:
    return [
        {"op": "mapDelete", "name": "filemeta_v0", "key": path},
        {"op": "mapDelete", "name": "docs", "key": path},
    ]


async def test_the_folder_doc_describes_imported_files_as_relay_expects(
    team: Team, yclients: YClientFactory
) -> None:
    relay, token = team.relay, team.token
    folder_doc = await relay.folder_doc_id(token, folder=FOLDER)
    client = await yclients(relay.doc_url(folder_doc), folder_doc, params={"token": token})
    filemeta = await client.get_map("filemeta_v0")
    assert filemeta["/Notes"]["type"] == "folder"
    existing = filemeta["/Notes/Existing.md"]
    assert existing["type"] == "markdown" and existing["version"] == 0
    assert (await client.get_map("docs"))["/Notes/Existing.md"] == existing["id"]
    # the content doc id is the folder's relay id followed by the file's uuid
    content_id = f"{folder_doc[:36]}-{existing['id']}"
    assert await relay.doc_id(token, folder=FOLDER, path="/Notes/Existing.md") == content_id
    assert await relay.doc_text(content_id, token=token) == EXISTING


async def test_create_rename_and_delete_through_filemeta_follow_in_the_api(
    team: Team, yclients: YClientFactory
) -> None:
    relay, token = team.relay, team.token
    params = {"token": token}
    folder_doc = await relay.folder_doc_id(token, folder=FOLDER)
    plugin = await yclients(relay.doc_url(folder_doc), folder_doc, params=params, label="plugin")
    observer = await yclients(relay.doc_url(folder_doc), folder_doc, params=params, label="observer")

    async def paths() -> dict[str, str]:
        return await relay.document_paths(token, folder=FOLDER)

    # --- create: the entry first, then connect to the new content doc at once and write
    file_uuid = str(uuid.uuid4())
    content_id = f"{folder_doc[:36]}-{file_uuid}"
    created = "/Notes/New idea 🆕.md"
    await plugin.transact(set_ops(created, file_uuid))
    writer = await yclients(relay.doc_url(content_id), content_id, params=params, label="writer")
    text = "# New idea\n\nCafé, 中文, 😀.\n"
    await writer.insert(0, text)

    listed = await poll(
        paths, lambda p: f"{FOLDER}{created}" in p, timeout=MIRROR_TIMEOUT, what="file listed"
    )
    assert listed[f"{FOLDER}{created}"] == content_id
    [document] = await relay.documents(token, folder=FOLDER, path=created)
    assert document["ws_url"].endswith(f"/d/{content_id}/ws")
    assert await poll(lambda: relay.doc_text(content_id, token=token), lambda t: t == text) == text
    await observer.wait_map("filemeta_v0", created, value=entry(file_uuid))

    # --- rename into a new sub-folder: delete the old key and set the new one in one transaction
    renamed = "/Moved here/Renamed idea ✓.md"
    folder_entry = entry(str(uuid.uuid4()), "folder")
    await plugin.transact(
        [
            {"op": "mapSet", "name": "filemeta_v0", "key": "/Moved here", "value": folder_entry},
            *delete_ops(created),
            *set_ops(renamed, file_uuid),
        ]
    )
    listed = await poll(
        paths,
        lambda p: f"{FOLDER}{renamed}" in p and f"{FOLDER}{created}" not in p,
        timeout=MIRROR_TIMEOUT,
        what="rename mirrored",
    )
    assert listed[f"{FOLDER}{renamed}"] == content_id  # same document, new path
    assert await relay.documents(token, folder=FOLDER, path=created) == []
    await observer.wait_map("filemeta_v0", created, present=False)
    # the content doc is unaffected by the move and still live
    await writer.insert(utf16_len(text), "After the move.\n")
    moved_text = text + "After the move.\n"
    assert (
        await poll(lambda: relay.doc_text(content_id, token=token), lambda t: t == moved_text) == moved_text
    )

    # --- delete
    await plugin.transact(delete_ops(renamed))
    listed = await poll(
        paths, lambda p: f"{FOLDER}{renamed}" not in p, timeout=MIRROR_TIMEOUT, what="deletion mirrored"
    )
    assert f"{FOLDER}/Notes/Existing.md" in listed  # the others are untouched
    assert content_id not in listed.values()
    # the folder doc as the server holds it agrees
    server_filemeta = await relay.doc_map(folder_doc, token=token, name="filemeta_v0")
    assert renamed not in server_filemeta and created not in server_filemeta
    assert "/Notes/Existing.md" in server_filemeta
