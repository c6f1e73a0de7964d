"""The folder sync client (`lensrelay-sync`, issue #35) against a running server, with real other sides: an
y-websocket client typing, the official MCP SDK assistant suggesting, a reviewer accepting over the admin's
HTTP. The client runs as its own process, as a person runs it; the test edits files as editors save them
(a temporary file renamed over the note)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import secrets
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.lensrelay.files.samples import png

from .browser import PASSWORD, call, mcp_client
from .conftest import YClientFactory
from .relay import Relay, TokenSpec, bearer, poll
from .syncclient import SyncProcess, editor_save, wait_file
from .test_review_page_browser import suggest
from .test_undo_http import Staff, rows
from .yclient import utf16_len

pytestmark = pytest.mark.e2e

SECOND = 1.0  # "within a second": a change made elsewhere is in the file by then
NOTES = {
    "Welcome.md": "# Welcome 🦊\n\nThe quick brown fox jumps over the lazy dog.\n",
    "Notes/Ideas.md": "# Ideas\n\n- Café, 中文, 😀\n- [[Welcome]]\n",
    "Notes/Deep/Plan.md": "# Plan\n\nStep one.\nStep two.\n",
}
FOLDERS = (
    "Start", "Together", "Stale", "Review", "Creates", "Readonly", "Hostile", "Offline", "Secret",
    "DiskMoves", "ServerMoves", "Outage", "Mass", "Files", "FileConflicts", "FilesReadonly", "FileRefusals",
    "EmptyDirs", "Suggesting", "Crash", "Relink", "Deletes",
)  # fmt: skip
# Small, so that the refusal of a file over the limit is quick to show.
MAX_FILE_BYTES = 256 * 1024
RELAY_ENV = {"LENSRELAY_MAX_FILE_BYTES": str(MAX_FILE_BYTES)}
_SETUP_USERS = """
from django.contrib.auth.models import Permission, User
review = Permission.objects.filter(codename__in=["view_suggestion", "review_suggestion"])
User.objects.create_user("rita", password={password!r}, is_staff=True).user_permissions.set(review)
print("E2E-USERS ok")
"""


@dataclass(frozen=True)
class World:
    relay: Relay
    edit: str
    view: str
    secret_only: str


@pytest.fixture(scope="module")
def world(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> World:
    vault = tmp_path_factory.mktemp("sync-vault")
    for name, text in NOTES.items():
        (vault / name).parent.mkdir(parents=True, exist_ok=True)
        (vault / name).write_text(text, encoding="utf-8")
    tokens = relay.setup(
        imports=[(vault, folder) for folder in FOLDERS],
        tokens={"secret-only": TokenSpec("edit", ("Secret",))},
    )
    assert "E2E-USERS ok" in relay.manage("shell", "-c", _SETUP_USERS.format(password=PASSWORD))
    return World(relay, relay.tokens["edit"], relay.tokens["view"], tokens["secret-only"])


async def start_sync(world: World, path: Path, folder: str | None, token: str | None = None) -> SyncProcess:
    return await SyncProcess.start(path, url=world.relay.http_url, token=token or world.edit, folder=folder)


async def server_text(world: World, folder: str, path: str) -> str:
    doc_id = await world.relay.doc_id(world.edit, folder=folder, path=path)
    return await world.relay.doc_text(doc_id, token=world.edit)


async def wait_synced_tree(directory: Path, notes: dict[str, str], timeout: float = 15.0) -> None:
    for name, text in notes.items():

        def equal(found: str | None, text: str = text) -> bool:
            return found == text

        await wait_file(directory / name, equal, timeout=timeout, what=name)


async def test_a_folder_meets_a_directory_both_ways_and_the_state_file_is_hidden(
    world: World, tmp_path: Path
) -> None:
    directory = tmp_path / "vault"
    (directory / "Local" / "Sub").mkdir(parents=True)
    (directory / "Local" / "Sub" / "From disk.md").write_text(
        "# From disk\n\nÉcrit ici 😀.\n", encoding="utf-8"
    )
    (directory / ".obsidian").mkdir()
    (directory / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    sync = await start_sync(world, directory, "Start")
    try:
        await wait_synced_tree(directory, NOTES)
        # Said once the first sync is done: the folder's three notes and the one from disk.
        assert "in sync: 4 notes and 0 other files" in await sync.wait_said("in sync:")
        paths = await poll(
            lambda: world.relay.document_paths(world.edit, folder="Start"),
            lambda p: "Start/Local/Sub/From disk.md" in p,
            what="the note made on disk listed on the server",
        )
        doc_id = paths["Start/Local/Sub/From disk.md"]
        await poll(
            lambda: world.relay.doc_text(doc_id, token=world.edit),
            lambda t: t == "# From disk\n\nÉcrit ici 😀.\n",
            what="its text on the server",
        )
        folder_doc = await world.relay.folder_doc_id(world.edit, folder="Start")
        filemeta = await world.relay.doc_map(folder_doc, token=world.edit, name="filemeta_v0")
        assert filemeta["/Local"]["type"] == "folder" and filemeta["/Local/Sub"]["type"] == "folder"
        assert not any(".obsidian" in key for key in filemeta)
        await wait_file(directory / ".lensrelay-sync.json", lambda t: t is not None, what="state file")
    finally:
        await sync.stop()
    state = json.loads((directory / ".lensrelay-sync.json").read_text(encoding="utf-8"))
    assert {entry["path"] for entry in state["notes"].values()} == {
        "/Welcome.md",
        "/Notes/Ideas.md",
        "/Notes/Deep/Plan.md",
        "/Local/Sub/From disk.md",
    }
    assert not [p for p in directory.rglob("*") if p.name.startswith(".lensrelay-sync-")]  # no temp left


async def test_editor_saves_and_a_live_client_typing_at_once_end_equal_with_nothing_lost(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Together")
    try:
        await wait_synced_tree(directory, NOTES)
        note = directory / "Notes" / "Deep" / "Plan.md"
        doc_id = await world.relay.doc_id(world.edit, folder="Together", path="/Notes/Deep/Plan.md")
        person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
        rounds = 30

        async def type_in_browser() -> None:
            for n in range(rounds):
                text = await person.text()
                at = utf16_len(text.split("Step one.")[0] + "Step one.")
                await person.insert(at, f" p{n}")
                await asyncio.sleep(0.03)

        async def save_on_disk() -> None:
            for n in range(rounds):
                text = note.read_text(encoding="utf-8")
                editor_save(note, text + f"disk {n} 中\n")
                await asyncio.sleep(0.05)

        await asyncio.gather(type_in_browser(), save_on_disk())
        # Everyone converges: the file, the npm client and the server hold one text with every edit.
        final = await poll(
            lambda: server_text(world, "Together", "/Notes/Deep/Plan.md"),
            lambda t: all(f" p{n}" in t and f"disk {n} 中\n" in t for n in range(rounds)),
            timeout=15,
            what="every edit of both sides on the server",
        )
        await asyncio.sleep(1.0)
        final = await server_text(world, "Together", "/Notes/Deep/Plan.md")
        assert note.read_text(encoding="utf-8") == final
        assert await person.text() == final
        assert final.startswith("# Plan\n\nStep one.") and final.count("Step two.\n") == 1
        for n in range(rounds):
            assert final.count(f" p{n} ") + final.count(f" p{n}\n") == 1, n
            assert final.count(f"disk {n} 中\n") == 1, n
    finally:
        await sync.stop()


async def test_a_deletion_alone_made_elsewhere_reaches_the_file(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Deletes")
    try:
        await wait_synced_tree(directory, NOTES)
        doc_id = await world.relay.doc_id(world.edit, folder="Deletes", path="/Welcome.md")
        person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
        # A Yjs update that only deletes leaves the state vector as it was: the file must follow all the same.
        text = NOTES["Welcome.md"]
        await person.delete(utf16_len(text.split(" brown")[0]), len(" brown"))
        expected = text.replace(" brown", "")
        assert await wait_file(directory / "Welcome.md", lambda t: t == expected, timeout=SECOND, what="it")
        # The same of a folder entry: a note deleted on the server leaves the directory.
        folder_doc = await world.relay.folder_doc_id(world.edit, folder="Deletes")
        plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
        await plugin.transact([{"op": "mapDelete", "name": "filemeta_v0", "key": "/Notes/Ideas.md"}])
        await poll(
            lambda: asyncio.sleep(0, (directory / "Notes" / "Ideas.md").exists()),
            lambda found: not found,
            timeout=2,
            what="the note deleted on the server gone from disk",
        )
    finally:
        await sync.stop()


async def test_an_editor_saving_a_buffer_read_before_the_sync_wrote_loses_nothing(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Stale")
    try:
        await wait_synced_tree(directory, NOTES)
        note = directory / "Notes" / "Deep" / "Plan.md"
        buffer = note.read_text(encoding="utf-8")  # an editor holds the note, then someone else types
        doc_id = await world.relay.doc_id(world.edit, folder="Stale", path="/Notes/Deep/Plan.md")
        person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
        await person.insert(utf16_len(buffer), "Typed in the browser.\n")
        await wait_file(note, lambda t: t is not None and "browser" in t, timeout=SECOND, what="the typing")
        # The editor had not reloaded: it saves its buffer with its own line, without the browser's.
        editor_save(note, buffer + "Saved on disk.\n")
        final = await person.wait_text(contains="Saved on disk.")
        assert final == buffer + "Typed in the browser.\nSaved on disk.\n"
        assert await wait_file(note, lambda t: t == final, timeout=SECOND, what="both lines in the file")
        assert await server_text(world, "Stale", "/Notes/Deep/Plan.md") == final
    finally:
        await sync.stop()


async def test_an_assistant_edit_appears_as_criticmarkup_and_an_accept_settles_it(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Review")
    try:
        await wait_synced_tree(directory, NOTES)
        note = directory / "Welcome.md"
        # A person's npm client on the note: the file follows what every other client sees, within a second.
        doc_id = await world.relay.doc_id(world.edit, folder="Review", path="/Welcome.md")
        person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
        async with mcp_client(world.relay.http_url, world.relay.tokens["suggest"]) as assistant:
            uid = await suggest(assistant, "Review/Welcome.md", "quick brown", "slow red")
        marked = await person.wait_text(contains="slow red++}")
        assert await wait_file(note, lambda t: t == marked, timeout=SECOND, what="the suggestion in the file")
        assert "quick brown--}" in marked and '"author":"suggest' in marked

        pk = (await asyncio.to_thread(rows, world.relay, [uid]))[uid]["pk"]
        rita = await Staff.sign_in(world.relay.http_url, "rita")
        decided = await rita.post(f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "accept"})
        assert decided.status_code == 302
        settled = await person.wait_text(contains="The slow red fox")
        assert settled == "# Welcome 🦊\n\nThe slow red fox jumps over the lazy dog.\n"
        assert await wait_file(note, lambda t: t == settled, timeout=SECOND, what="the accept in the file")
        assert await server_text(world, "Review", "/Welcome.md") == settled
    finally:
        await sync.stop()


async def test_notes_created_on_either_side_appear_on_the_other(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Creates")
    try:
        await wait_synced_tree(directory, NOTES)
        # On the server, as a Relay client makes a note: the folder entry, then the content document.
        folder_doc = await world.relay.folder_doc_id(world.edit, folder="Creates")
        plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
        file_uuid = str(uuid.uuid4())
        path = "/Notes/Fresh ✓.md"
        await plugin.transact(
            [
                {"op": "mapSet", "name": "filemeta_v0", "key": path,
                 "value": {"id": file_uuid, "type": "markdown", "version": 0}},
                {"op": "mapSet", "name": "docs", "key": path, "value": file_uuid},
            ]
        )  # fmt: skip
        content_id = f"{folder_doc[:36]}-{file_uuid}"
        writer = await yclients(world.relay.doc_url(content_id), content_id, params={"token": world.edit})
        await writer.insert(0, "# Fresh\n\nMade in the browser.\n")
        await wait_file(
            directory / "Notes" / "Fresh ✓.md",
            lambda t: t == "# Fresh\n\nMade in the browser.\n",
            timeout=5,
            what="the server's new note on disk",
        )
        # On disk, saved as an editor saves a new note.
        editor_save(directory / "Notes" / "Mine.md", "# Mine\n\nTyped in Obsidian.\n")
        listed = await poll(
            lambda: world.relay.document_paths(world.edit, folder="Creates"),
            lambda p: "Creates/Notes/Mine.md" in p,
            what="the disk's new note on the server",
        )
        watcher = await yclients(
            world.relay.doc_url(listed["Creates/Notes/Mine.md"]),
            listed["Creates/Notes/Mine.md"],
            params={"token": world.edit},
        )
        await watcher.wait_text(equals="# Mine\n\nTyped in Obsidian.\n")
        # ... and it is live both ways from then on.
        await watcher.insert(utf16_len("# Mine\n\n"), "Hello. ")
        await wait_file(
            directory / "Notes" / "Mine.md",
            lambda t: t == "# Mine\n\nHello. Typed in Obsidian.\n",
            timeout=SECOND,
            what="a live edit of the new note",
        )
    finally:
        await sync.stop()


async def test_a_view_token_mirrors_read_only_and_puts_a_changed_file_back(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Readonly", token=world.view)
    try:
        await wait_synced_tree(directory, NOTES)
        note = directory / "Welcome.md"
        editor_save(note, "# Vandalised\n")
        await wait_file(note, lambda t: t == NOTES["Welcome.md"], timeout=2, what="the file put back")
        said = await sync.wait_said("may only read")
        editor_save(note, "# Vandalised again\n")
        await wait_file(note, lambda t: t == NOTES["Welcome.md"], timeout=2, what="put back again")
        editor_save(directory / "New.md", "# New\n")
        (directory / "Notes" / "Ideas.md").unlink()
        await wait_file(
            directory / "Notes" / "Ideas.md",
            lambda t: t == NOTES["Notes/Ideas.md"],
            what="a deleted note back",
        )
        await asyncio.sleep(0.5)
        # Said once per file, never sent: the server has exactly what it had.
        assert sync.said.count("Welcome.md was put back") == 1, sync.said
        assert "New.md stays on this disk" in sync.said
        paths = await world.relay.document_paths(world.edit, folder="Readonly")
        assert set(paths) == {f"Readonly/{name}" for name in NOTES}
        for name, text in NOTES.items():
            assert await server_text(world, "Readonly", f"/{name}") == text
        # ... while changes made elsewhere still arrive.
        doc_id = paths["Readonly/Welcome.md"]
        person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
        await person.insert(0, "Hi. ")
        await wait_file(note, lambda t: t == "Hi. " + NOTES["Welcome.md"], timeout=SECOND, what="a live edit")
        assert "Vandalised" not in said
    finally:
        await sync.stop()


async def test_a_suggest_tokens_saves_become_its_suggestions_and_a_decision_settles_them(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Suggesting", token=world.relay.tokens["suggest"])
    try:
        await wait_synced_tree(directory, NOTES)
        assert "suggesting (the token may only suggest" in await sync.wait_said("mirroring")
        note = directory / "Welcome.md"
        doc_id = await world.relay.doc_id(world.edit, folder="Suggesting", path="/Welcome.md")
        person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
        editor_save(note, NOTES["Welcome.md"].replace("quick brown", "slow red"))
        # Not a live edit: the token's suggestion, in the document and (with its marks) in the file.
        marked = await person.wait_text(contains="slow red++}")
        assert "quick brown--}" in marked and '"author":"suggest' in marked
        assert await wait_file(note, lambda t: t == marked, timeout=SECOND, what="the marks in the file")
        uid = re.search(r'"id":"([^"]+)"', marked)
        assert uid is not None
        row = (await asyncio.to_thread(rows, world.relay, [uid.group(1)]))[uid.group(1)]
        assert row["status"] == "pending"

        # Marks are not the token's to change: forging their author is said and put back, nothing sent;
        # taking the suggestion back is refused by the server, saying why, and put back too.
        editor_save(note, marked.replace('"author":"suggest', '"author":"rita'))
        await sync.wait_said("not the marks of pending suggestions")
        assert await wait_file(note, lambda t: t == marked, timeout=2, what="the marks put back")
        editor_save(note, NOTES["Welcome.md"])
        await sync.wait_said("only takes back pending suggestion")
        assert await wait_file(note, lambda t: t == marked, timeout=2, what="the marks put back again")
        assert await server_text(world, "Suggesting", "/Welcome.md") == marked

        rita = await Staff.sign_in(world.relay.http_url, "rita")
        decide = f"/admin/suggestions/suggestion/{row['pk']}/decide/"
        assert (await rita.post(decide, {"decision": "accept"})).status_code == 302
        settled = NOTES["Welcome.md"].replace("quick brown", "slow red")
        assert await person.wait_text(contains="The slow red fox") == settled
        assert await wait_file(note, lambda t: t == settled, timeout=SECOND, what="the accept in the file")
        # New notes stay on this disk: only the text of existing notes is suggested.
        editor_save(directory / "Mine.md", "# Mine\n")
        await sync.wait_said("Mine.md stays on this disk")
        assert "Suggesting/Mine.md" not in await world.relay.document_paths(world.edit, folder="Suggesting")
    finally:
        await sync.stop()


async def test_a_token_of_another_folder_sees_nothing_of_it(world: World, tmp_path: Path) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Start", token=world.secret_only)
    assert await sync.wait() == 1
    assert "the token sees no folder named 'Start'" in sync.said
    assert not directory.exists() or not any(directory.iterdir())
    # Without --folder it mirrors its own folder, and only that one.
    sync = await start_sync(world, directory, None, token=world.secret_only)
    try:
        await wait_synced_tree(directory, NOTES)
        await asyncio.sleep(0.5)
        files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*.md"))
        assert files == sorted(NOTES)
        assert json.loads((directory / ".lensrelay-sync.json").read_text())["folder_doc"] == (
            await world.relay.folder_doc_id(world.edit, folder="Secret")
        )
    finally:
        await sync.stop()


async def test_hostile_names_are_refused_with_a_message_and_nothing_is_written_outside(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    directory = tmp_path / "vault"
    directory.mkdir()
    hostile = {
        "_trash/Sneaky.md": "in the trash",
        "_TRASH./Sneaky.md": "the trash, spelled otherwise",
        "CON.md": "a device name",
        "nul.txt.md": "a device name with extensions",
        "Odd but fine. .md": "a strange name the folder may hold",
    }
    for name, text in hostile.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text, encoding="utf-8")
    deep = directory.joinpath(*["d" * 200] * 6)
    deep.mkdir(parents=True)
    (deep / "Too deep.md").write_text("too long a path", encoding="utf-8")
    (directory / "Escape").symlink_to(outside, target_is_directory=True)
    bad = os.fsencode(str(directory)) + b"/Bad \xff bytes.md"
    with open(bad, "wb") as out:
        out.write(b"not utf-8 in the name")
    sync = await start_sync(world, directory, "Hostile")
    try:
        await wait_synced_tree(directory, NOTES)
        # The server side tries too: entries no client should honour, written into the folder document.
        folder_doc = await world.relay.folder_doc_id(world.edit, folder="Hostile")
        plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
        for path in ("/../escaped.md", "/Escape/through-link.md", "//x.md", "/_trash/x.md"):
            file_uuid = str(uuid.uuid4())
            await plugin.transact(
                [{"op": "mapSet", "name": "filemeta_v0", "key": path,
                  "value": {"id": file_uuid, "type": "markdown", "version": 0}}]
            )  # fmt: skip
        said = await sync.wait_said("Escape")
        await asyncio.sleep(1.0)
        said = sync.said
        for fragment in ("_trash", "_TRASH.", "CON.md", "nul.txt.md", "longer than", "not UTF-8", "symbolic"):
            assert fragment in said or fragment.lower() in said.lower(), (fragment, said)
        paths = set(await world.relay.document_paths(world.edit, folder="Hostile"))
        # The server holds what its rules allow ("Escape" is a fine name there); the client writes none of it
        # through the link.
        expected = {f"Hostile/{name}" for name in NOTES} | {"Hostile/Odd but fine. .md"}
        assert paths == expected | {"Hostile/Escape/through-link.md"}, paths
        assert list(outside.iterdir()) == []
        assert not (tmp_path / "escaped.md").exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "vault"]
    finally:
        await sync.stop()


async def test_edits_made_while_the_client_was_stopped_are_merged_on_restart(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Offline")
    await wait_synced_tree(directory, NOTES)
    await asyncio.sleep(1.5)  # the state file is saved
    await sync.stop()
    note = directory / "Notes" / "Deep" / "Plan.md"
    editor_save(note, "# Plan\n\nStep one, done on the train.\nStep two.\n")
    doc_id = await world.relay.doc_id(world.edit, folder="Offline", path="/Notes/Deep/Plan.md")
    person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
    await person.insert(utf16_len("# Plan\n\nStep one.\nStep two."), " Done at the office.")
    sync = await start_sync(world, directory, "Offline")
    try:
        merged = "# Plan\n\nStep one, done on the train.\nStep two. Done at the office.\n"
        await wait_file(note, lambda t: t == merged, timeout=10, what="both offline edits merged")
        await person.wait_text(equals=merged)
        assert await server_text(world, "Offline", "/Notes/Deep/Plan.md") == merged
    finally:
        await sync.stop()


async def test_a_state_file_older_than_both_sides_after_a_crash_duplicates_nothing(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Crash")
    note = directory / "Notes" / "Deep" / "Plan.md"
    try:
        await wait_synced_tree(directory, NOTES)
        doc_id = await world.relay.doc_id(world.edit, folder="Crash", path="/Notes/Deep/Plan.md")
        person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
        await person.insert(utf16_len(NOTES["Notes/Deep/Plan.md"]), "Step three.\n")
        await wait_file(note, lambda t: t is not None and "three" in t, timeout=SECOND, what="the typing")
        await asyncio.sleep(1.5)
    finally:
        await sync.stop()
    # Killed between writing the file and saving its state: the state still names the text before.
    state_file = directory / ".lensrelay-sync.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    for entry in state["notes"].values():
        if entry["path"] == "/Notes/Deep/Plan.md":
            entry["text"] = NOTES["Notes/Deep/Plan.md"]
    state_file.write_text(json.dumps(state), encoding="utf-8")
    sync = await start_sync(world, directory, "Crash")
    try:
        await asyncio.sleep(2.0)
        expected = NOTES["Notes/Deep/Plan.md"] + "Step three.\n"
        assert await server_text(world, "Crash", "/Notes/Deep/Plan.md") == expected
        assert note.read_text(encoding="utf-8") == expected
    finally:
        await sync.stop()


async def test_a_rename_in_obsidian_which_rewrites_the_links_itself_rewrites_each_link_once(
    world: World, tmp_path: Path
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Relink")
    try:
        await wait_synced_tree(directory, NOTES)
        await asyncio.sleep(0.5)
        # Obsidian renames the note and saves every note that links to it with the link rewritten, at once.
        os.rename(directory / "Welcome.md", directory / "Hello.md")
        relinked = NOTES["Notes/Ideas.md"].replace("[[Welcome]]", "[[Hello]]")
        editor_save(directory / "Notes" / "Ideas.md", relinked)
        await poll(
            lambda: world.relay.document_paths(world.edit, folder="Relink"),
            lambda p: "Relink/Hello.md" in p and "Relink/Welcome.md" not in p,
            what="the rename on the server",
        )
        await asyncio.sleep(1.0)
        assert await server_text(world, "Relink", "/Notes/Ideas.md") == relinked
        assert (directory / "Notes" / "Ideas.md").read_text(encoding="utf-8") == relinked
    finally:
        await sync.stop()


async def test_renames_moves_and_deletes_on_disk_reach_the_server(world: World, tmp_path: Path) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "DiskMoves")
    try:
        await wait_synced_tree(directory, NOTES)
        before = await world.relay.document_paths(world.edit, folder="DiskMoves")
        folder_doc = await world.relay.folder_doc_id(world.edit, folder="DiskMoves")

        # A rename into a sub-folder (as a file manager or Obsidian does it): the same document, a new path.
        os.rename(directory / "Welcome.md", directory / "Notes" / "Hello.md")
        after = await poll(
            lambda: world.relay.document_paths(world.edit, folder="DiskMoves"),
            lambda p: "DiskMoves/Notes/Hello.md" in p and "DiskMoves/Welcome.md" not in p,
            what="the rename on the server",
        )
        assert after["DiskMoves/Notes/Hello.md"] == before["DiskMoves/Welcome.md"]
        # The server carried it out, so the link to it followed, there and in the file that holds it.
        relinked = NOTES["Notes/Ideas.md"].replace("[[Welcome]]", "[[Hello]]")
        assert await server_text(world, "DiskMoves", "/Notes/Ideas.md") == relinked
        ideas = directory / "Notes" / "Ideas.md"
        assert await wait_file(ideas, lambda t: t == relinked, timeout=SECOND, what="the link in the file")

        # A whole directory renamed: its note keeps its document, the new folders get entries, the old goes.
        (directory / "Archive").mkdir()
        os.rename(directory / "Notes" / "Deep", directory / "Archive" / "Deeper")
        after = await poll(
            lambda: world.relay.document_paths(world.edit, folder="DiskMoves"),
            lambda p: "DiskMoves/Archive/Deeper/Plan.md" in p,
            what="the directory's rename on the server",
        )
        assert after["DiskMoves/Archive/Deeper/Plan.md"] == before["DiskMoves/Notes/Deep/Plan.md"]
        filemeta = await poll(
            lambda: world.relay.doc_map(folder_doc, token=world.edit, name="filemeta_v0"),
            lambda m: "/Notes/Deep" not in m,
            what="the old sub-folder's entry gone",
        )
        assert filemeta["/Archive"]["type"] == filemeta["/Archive/Deeper"]["type"] == "folder"

        # A delete: to the folder's trash on the server, the same document, restorable.
        (directory / "Notes" / "Ideas.md").unlink()
        filemeta = await poll(
            lambda: world.relay.doc_map(folder_doc, token=world.edit, name="filemeta_v0"),
            lambda m: "/_trash/Notes/Ideas.md" in m,
            what="the delete in the trash",
        )
        assert (
            f"{folder_doc[:36]}-{filemeta['/_trash/Notes/Ideas.md']['id']}"
            == before["DiskMoves/Notes/Ideas.md"]
        )
        assert "DiskMoves/Notes/Ideas.md" not in await world.relay.document_paths(
            world.edit, folder="DiskMoves"
        )
        # And what was renamed is still live both ways.
        editor_save(directory / "Notes" / "Hello.md", NOTES["Welcome.md"] + "Renamed, still live.\n")
        await poll(
            lambda: server_text(world, "DiskMoves", "/Notes/Hello.md"),
            lambda t: t.endswith("Renamed, still live.\n"),
            what="an edit after the rename",
        )
        assert (directory / "Welcome.md").exists() is False
    finally:
        await sync.stop()


async def test_moves_and_deletes_on_the_server_reach_the_disk_with_links_rewritten(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "ServerMoves")
    try:
        await wait_synced_tree(directory, NOTES)
        # An assistant proposes the move, a reviewer accepts it: the server moves the note and rewrites links.
        async with mcp_client(world.relay.http_url, world.relay.tokens["suggest"]) as assistant:
            answer = await call(
                assistant,
                "move",
                {"file_path": "ServerMoves/Welcome.md", "new_path": "ServerMoves/Home/Start.md"},
            )
        uid = answer.split("(suggestion ", 1)[1].split(",", 1)[0].split(")", 1)[0]
        pk = (await asyncio.to_thread(rows, world.relay, [uid]))[uid]["pk"]
        rita = await Staff.sign_in(world.relay.http_url, "rita")
        decided = await rita.post(f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "accept"})
        assert decided.status_code == 302
        await wait_file(
            directory / "Home" / "Start.md", lambda t: t == NOTES["Welcome.md"], what="moved file"
        )
        assert not (directory / "Welcome.md").exists()
        ideas = await poll(
            lambda: server_text(world, "ServerMoves", "/Notes/Ideas.md"),
            lambda t: "[[Welcome]]" not in t,
            what="the link rewritten on the server",
        )
        assert "Start" in ideas
        await wait_file(
            directory / "Notes" / "Ideas.md", lambda t: t == ideas, what="the rewritten link on disk"
        )

        # A Relay client removes an entry: the server trashes it, the file goes.
        folder_doc = await world.relay.folder_doc_id(world.edit, folder="ServerMoves")
        plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
        await plugin.transact(
            [
                {"op": "mapDelete", "name": "filemeta_v0", "key": "/Notes/Deep/Plan.md"},
                {"op": "mapDelete", "name": "docs", "key": "/Notes/Deep/Plan.md"},
            ]
        )
        await wait_file(
            directory / "Notes" / "Deep" / "Plan.md", lambda t: t is None, what="the deleted file"
        )
        await asyncio.sleep(1.0)
        # Nothing came back: the server's trash holds it, the disk does not.
        assert "ServerMoves/Notes/Deep/Plan.md" not in await world.relay.document_paths(
            world.edit, folder="ServerMoves"
        )
        assert not (directory / "Notes" / "Deep" / "Plan.md").exists()
    finally:
        await sync.stop()


async def test_a_server_outage_while_both_sides_edit_is_merged_when_it_is_back(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Outage")
    try:
        await wait_synced_tree(directory, NOTES)
        doc_id = await world.relay.doc_id(world.edit, folder="Outage", path="/Notes/Deep/Plan.md")
        person = await yclients(world.relay.doc_url(doc_id), doc_id, params={"token": world.edit})
        await world.relay.server.astop()
        # Both sides edit while the server is down: the file on disk, and the npm client (offline too).
        note = directory / "Notes" / "Deep" / "Plan.md"
        editor_save(note, "# Plan\n\nStep one, written offline.\nStep two.\n")
        await person.insert(utf16_len("# Plan\n\nStep one.\nStep two."), " Also offline.")
        editor_save(directory / "Made offline.md", "# Made offline\n")
        await asyncio.sleep(1.5)  # the client tries to reconnect meanwhile
        await world.relay.server.astart()
        merged = "# Plan\n\nStep one, written offline.\nStep two. Also offline.\n"
        await wait_file(note, lambda t: t == merged, timeout=15, what="both offline edits in the file")
        await person.wait_text(equals=merged, timeout=15)
        assert await server_text(world, "Outage", "/Notes/Deep/Plan.md") == merged
        listed = await poll(
            lambda: world.relay.document_paths(world.edit, folder="Outage"),
            lambda p: "Outage/Made offline.md" in p,
            timeout=15,
            what="the note made offline listed",
        )
        await poll(
            lambda: world.relay.doc_text(listed["Outage/Made offline.md"], token=world.edit),
            lambda t: t == "# Made offline\n",
            timeout=15,
            what="the note made offline on the server",
        )
    finally:
        await sync.stop()


async def test_a_whole_tree_vanishing_at_once_is_written_back_not_trashed(
    world: World, tmp_path: Path
) -> None:
    directory = tmp_path / "vault"
    (directory / "Many").mkdir(parents=True)
    many = {f"Many/Note {n}.md": f"# Note {n}\n" for n in range(30)}
    for name, text in many.items():
        (directory / name).write_text(text, encoding="utf-8")
    sync = await start_sync(world, directory, "Mass")
    try:
        await wait_synced_tree(directory, NOTES)
        await poll(
            lambda: world.relay.document_paths(world.edit, folder="Mass"),
            lambda p: len(p) == len(NOTES) + len(many),
            what="every note listed",
        )
        # Their texts too: a note removed before its first upload has nothing on the server to come back
        # from (in CI one was written back empty when `rm -r` came between its entry and its text).
        for name, text in many.items():
            await poll(
                lambda name=name: server_text(world, "Mass", f"/{name}"),  # type: ignore[misc]
                lambda found, text=text: found == text,  # type: ignore[misc]
                what=f"the text of {name} on the server",
            )
        shutil.rmtree(directory / "Many")  # a mistaken rm -r
        await wait_synced_tree(directory, many)
        assert "33 notes vanished" not in sync.said and "30 notes vanished" in sync.said
        assert len(await world.relay.document_paths(world.edit, folder="Mass")) == len(NOTES) + len(many)
    finally:
        await sync.stop()


async def test_once_reconciles_and_exits(world: World, tmp_path: Path) -> None:
    directory = tmp_path / "vault"
    sync = await SyncProcess.start(
        directory, url=world.relay.http_url, token=world.view, folder="Secret", extra=("--once",)
    )
    assert await sync.wait() == 0, sync.said
    for name, text in NOTES.items():
        assert (directory / name).read_text(encoding="utf-8") == text


# ---------------------------------------------------------------------------------------------- attachments


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def drop(path: Path, data: bytes) -> None:
    """Put a file in the directory as a file manager or an editor's paste does: a temporary file, renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    temp.write_bytes(data)
    os.replace(temp, path)


async def wait_bytes(path: Path, data: bytes | None, *, timeout: float = 10.0, what: str = "file") -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found: bytes | None = path.read_bytes()
        except FileNotFoundError:
            found = None
        if found == data:
            return
        if time.monotonic() > deadline:
            shown = None if found is None else f"{len(found)} bytes, sha256 {sha(found)[:12]}"
            raise AssertionError(f"{what} ({path}) not reached within {timeout} s; found {shown}")
        await asyncio.sleep(0.02)


async def served(world: World, folder_doc: str, meta: dict[str, Any], token: str | None = None) -> bytes:
    """The bytes the server serves for an entry, through the routes any client downloads with."""
    doc_id = f"{folder_doc[:36]}-{meta['id']}"
    async with httpx.AsyncClient(base_url=world.relay.http_url, timeout=20) as http:
        answer = await http.get(
            f"/f/{doc_id}/download-url", params={"hash": meta["hash"]}, headers=bearer(token or world.view)
        )
        assert answer.status_code == 200, answer.text
        got = await http.get(answer.json()["downloadUrl"])
        assert got.status_code == 200
        return got.content


async def upload_on_server(
    world: World, plugin: Any, folder_doc: str, path: str, data: bytes, *, file_uuid: str | None = None
) -> str:
    """Add or replace a file as a Relay client does (the browser plugin's route): the bytes through the file
    routes, then the folder entry naming their hash."""
    file_uuid = file_uuid or str(uuid.uuid4())
    doc_id = f"{folder_doc[:36]}-{file_uuid}"
    async with httpx.AsyncClient(base_url=world.relay.http_url, timeout=20) as http:
        answer = await http.post(
            f"/f/{doc_id}/upload-url",
            params={"hash": sha(data), "content_type": "image/png", "content_length": str(len(data))},
            headers=bearer(world.edit),
        )
        assert answer.status_code == 200, answer.text
        put = await http.put(answer.json()["uploadUrl"], content=data, headers={"Content-Type": "image/png"})
        assert put.status_code == 200, put.text
    meta = {
        "id": file_uuid, "type": "image", "version": 0, "hash": sha(data), "mimetype": "image/png",
        "synctime": int(time.time() * 1000),
    }  # fmt: skip
    await plugin.transact(
        [
            {"op": "mapSet", "name": "filemeta_v0", "key": path, "value": meta},
            {"op": "mapSet", "name": "docs", "key": path, "value": file_uuid},
        ]
    )
    return file_uuid


async def test_attachments_go_both_ways_byte_for_byte(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    sync = await start_sync(world, directory, "Files")
    folder_doc = await world.relay.folder_doc_id(world.edit, folder="Files")
    plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
    try:
        await wait_synced_tree(directory, NOTES)
        # Dropped on disk: uploaded, listed in the folder document for every client, served byte for byte.
        dropped = png(1, size=64)
        drop(directory / "Images" / "Dropped ✓.png", dropped)
        await plugin.wait_map("filemeta_v0", "/Images/Dropped ✓.png", timeout=10)
        entry = (await plugin.get_map("filemeta_v0"))["/Images/Dropped ✓.png"]
        assert entry["hash"] == sha(dropped) and entry["type"] == "image" and entry["mimetype"] == "image/png"
        assert (await plugin.get_map("filemeta_v0"))["/Images"]["type"] == "folder"
        assert await served(world, folder_doc, entry) == dropped
        # Uploaded on the server by another client: on disk byte for byte.
        uploaded = png(2, size=48)
        up_uuid = await upload_on_server(world, plugin, folder_doc, "/From server.png", uploaded)
        await wait_bytes(directory / "From server.png", uploaded, what="the server's upload on disk")
        # Replaced on the server (same file, new bytes), then on disk.
        replaced = png(3, size=48)
        await upload_on_server(world, plugin, folder_doc, "/From server.png", replaced, file_uuid=up_uuid)
        await wait_bytes(directory / "From server.png", replaced, what="the server's new version on disk")
        mine = png(4, size=40)
        drop(directory / "From server.png", mine)

        async def entry_of(path: str) -> Any:
            return (await plugin.get_map("filemeta_v0")).get(path)

        changed = await poll(
            lambda: entry_of("/From server.png"),
            lambda e: e is not None and e["hash"] == sha(mine),
            what="the disk's new version in the entry",
        )
        assert changed["id"] == up_uuid  # the same file, not a new one
        assert await served(world, folder_doc, changed) == mine
        # Renamed on the server (the entry keeps its id): renamed on disk.
        await plugin.transact(
            [
                {"op": "mapDelete", "name": "filemeta_v0", "key": "/From server.png"},
                {"op": "mapDelete", "name": "docs", "key": "/From server.png"},
                {"op": "mapSet", "name": "filemeta_v0", "key": "/Images/Renamed.png", "value": changed},
                {"op": "mapSet", "name": "docs", "key": "/Images/Renamed.png", "value": up_uuid},
            ]
        )
        await wait_bytes(directory / "Images" / "Renamed.png", mine, what="the renamed file")
        await wait_bytes(directory / "From server.png", None, what="the old name gone")
        # Renamed on disk: the entry moves, same id.
        os.rename(directory / "Images" / "Renamed.png", directory / "Moved here.png")
        moved = await poll(
            lambda: entry_of("/Moved here.png"),
            lambda e: e is not None,
            what="the disk's rename on the server",
        )
        assert moved["id"] == up_uuid and await entry_of("/Images/Renamed.png") is None
        # Deleted on disk: to the folder's trash on the server, bytes kept.
        (directory / "Images" / "Dropped ✓.png").unlink()
        trashed = await poll(
            lambda: entry_of("/_trash/Images/Dropped ✓.png"),
            lambda e: e is not None,
            what="the disk's delete in the server's trash",
        )
        assert await entry_of("/Images/Dropped ✓.png") is None
        assert await served(world, folder_doc, trashed, token=world.edit) == dropped
        # Deleted on the server: removed on disk.
        await plugin.transact(
            [
                {"op": "mapDelete", "name": "filemeta_v0", "key": "/Moved here.png"},
                {"op": "mapDelete", "name": "docs", "key": "/Moved here.png"},
            ]
        )
        await wait_bytes(directory / "Moved here.png", None, what="the server's delete on disk")
        await asyncio.sleep(1.0)
        assert (
            not (directory / "Moved here.png").exists()
            and not (directory / "Images" / "Dropped ✓.png").exists()
        )
        state = json.loads((directory / ".lensrelay-sync.json").read_text(encoding="utf-8"))
        assert state["files"] == {}
    finally:
        await sync.stop()


async def test_a_binary_changed_on_both_sides_keeps_the_newer_and_the_other_in_a_trash(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    folder_doc = await world.relay.folder_doc_id(world.edit, folder="FileConflicts")
    plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
    first, second = png(10), png(11)
    one = await upload_on_server(world, plugin, folder_doc, "/One.png", first)
    two = await upload_on_server(world, plugin, folder_doc, "/Two.png", second)
    sync = await start_sync(world, directory, "FileConflicts")
    await wait_bytes(directory / "One.png", first)
    await wait_bytes(directory / "Two.png", second)
    await asyncio.sleep(1.5)  # the state file is saved
    await sync.stop()
    # One.png: changed here, then (later, so newer) on the server -> the server's wins, ours kept in .trash/.
    ours_one, theirs_one = png(12), png(13)
    drop(directory / "One.png", ours_one)
    old = time.time() - 60
    os.utime(directory / "One.png", (old, old))
    await upload_on_server(world, plugin, folder_doc, "/One.png", theirs_one, file_uuid=one)
    # Two.png: changed on the server, then here (newer) -> ours wins, the server's in the folder's trash.
    theirs_two, ours_two = png(14), png(15)
    await upload_on_server(world, plugin, folder_doc, "/Two.png", theirs_two, file_uuid=two)
    await asyncio.sleep(0.05)
    drop(directory / "Two.png", ours_two)
    later = time.time() + 60
    os.utime(directory / "Two.png", (later, later))
    sync = await start_sync(world, directory, "FileConflicts")
    try:
        await wait_bytes(directory / "One.png", theirs_one, what="the server's newer One.png")
        await wait_bytes(directory / ".trash" / "One.png", ours_one, what="our One.png kept in .trash/")

        async def filemeta() -> dict[str, Any]:
            return await plugin.get_map("filemeta_v0")

        found = await poll(
            filemeta,
            lambda m: m.get("/Two.png", {}).get("hash") == sha(ours_two) and "/_trash/Two.png" in m,
            what="our newer Two.png on the server, theirs in the trash",
        )
        assert await served(world, folder_doc, found["/Two.png"]) == ours_two
        assert await served(world, folder_doc, found["/_trash/Two.png"], token=world.edit) == theirs_two
        assert (directory / "Two.png").read_bytes() == ours_two
        assert "/.trash/One.png" not in found  # the local trash is never mirrored
        await sync.wait_said("wins")
    finally:
        await sync.stop()


async def test_a_view_token_never_uploads_and_puts_a_changed_file_back(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    folder_doc = await world.relay.folder_doc_id(world.edit, folder="FilesReadonly")
    plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
    original = png(20)
    await upload_on_server(world, plugin, folder_doc, "/Kept.png", original)
    sync = await start_sync(world, directory, "FilesReadonly", token=world.view)
    try:
        await wait_bytes(directory / "Kept.png", original)
        before = await plugin.get_map("filemeta_v0")
        drop(directory / "New.png", png(21))
        vandal = png(22)
        drop(directory / "Kept.png", vandal)
        await wait_bytes(directory / "Kept.png", original, what="the file put back")
        await wait_bytes(directory / ".trash" / "Kept.png", vandal, what="the local change kept aside")
        (directory / "Kept.png").unlink()
        await wait_bytes(directory / "Kept.png", original, what="a deleted file back")
        await sync.wait_said("New.png stays on this disk")
        await asyncio.sleep(1.0)
        assert sync.said.count("New.png stays on this disk") == 1, sync.said
        assert (directory / "New.png").read_bytes() == png(21)  # left unsynced, never removed
        assert await plugin.get_map("filemeta_v0") == before
    finally:
        await sync.stop()


async def test_hostile_and_too_big_attachments_are_refused_once_with_a_message(
    world: World, tmp_path: Path, yclients: YClientFactory
) -> None:
    directory = tmp_path / "vault"
    for name in (
        "_trash/Sneaky.png",
        "CON.png",
        "Trailing dot.png.",
        "/".join(["d" * 200] * 6) + "/Deep.png",
    ):
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(png(30))
    big = os.urandom(MAX_FILE_BYTES + 1)
    (directory / "Huge.bin").write_bytes(big)
    folder_doc = await world.relay.folder_doc_id(world.edit, folder="FileRefusals")
    plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
    # And from the server's side, an entry no client should honour.
    await plugin.transact(
        [{"op": "mapSet", "name": "filemeta_v0", "key": "/../escaped.png",
          "value": {"id": str(uuid.uuid4()), "type": "image", "version": 0, "hash": sha(png(31))}},
         # An entry naming bytes the server does not hold: said once, not asked for again and again.
         {"op": "mapSet", "name": "filemeta_v0", "key": "/Missing.png",
          "value": {"id": str(uuid.uuid4()), "type": "image", "version": 0, "hash": sha(png(32))}}]
    )  # fmt: skip
    sync = await start_sync(world, directory, "FileRefusals")
    try:
        await wait_synced_tree(directory, NOTES)
        said = await sync.wait_said("Huge.bin: not uploaded")
        assert "413" in said and str(MAX_FILE_BYTES) in said, said
        await asyncio.sleep(1.5)  # several scans: said once, never retried
        said = sync.said
        assert said.count("Huge.bin: not uploaded") == 1, said
        assert said.count("Missing.png: not downloaded") == 1, said
        assert not (directory / "Missing.png").exists()
        for fragment in ("_trash", "CON.png", "Trailing dot.png.", "longer than"):
            assert fragment in said, (fragment, said)
        filemeta = await plugin.get_map("filemeta_v0")
        assert not [
            key
            for key in filemeta
            if key.endswith((".png", ".bin")) and key not in {"/../escaped.png", "/Missing.png"}
        ]
        assert not (tmp_path / "escaped.png").exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["vault"]
        # Once it changes to a size the server takes, it goes up.
        drop(directory / "Huge.bin", big[:1000])

        async def entry() -> Any:
            return (await plugin.get_map("filemeta_v0")).get("/Huge.bin")

        found = await poll(entry, lambda e: e is not None, what="the smaller file uploaded")
        assert found["hash"] == sha(big[:1000]) and found["type"] == "file"
    finally:
        await sync.stop()


async def test_empty_directories_go_both_ways(world: World, tmp_path: Path, yclients: YClientFactory) -> None:
    directory = tmp_path / "vault"
    (directory / "Made before").mkdir(parents=True)
    sync = await start_sync(world, directory, "EmptyDirs")
    folder_doc = await world.relay.folder_doc_id(world.edit, folder="EmptyDirs")
    plugin = await yclients(world.relay.doc_url(folder_doc), folder_doc, params={"token": world.edit})
    try:
        await wait_synced_tree(directory, NOTES)
        await plugin.wait_map("filemeta_v0", "/Made before", timeout=10)
        (directory / "Empty" / "Inner").mkdir(parents=True)
        await plugin.wait_map("filemeta_v0", "/Empty/Inner", timeout=10)
        filemeta = await plugin.get_map("filemeta_v0")
        assert filemeta["/Empty"]["type"] == filemeta["/Empty/Inner"]["type"] == "folder"
        # Made on the server: a directory on disk.
        await plugin.transact(
            [{"op": "mapSet", "name": "filemeta_v0", "key": "/From server",
              "value": {"id": str(uuid.uuid4()), "type": "folder", "version": 0}}]
        )  # fmt: skip
        await poll(
            lambda: asyncio.sleep(0, (directory / "From server").is_dir()),
            lambda found: found,
            what="the server's empty folder on disk",
        )
        # Removed on disk: the entry goes; removed on the server: the directory goes.
        (directory / "Empty" / "Inner").rmdir()
        await plugin.wait_map("filemeta_v0", "/Empty/Inner", present=False, timeout=10)
        await plugin.transact([{"op": "mapDelete", "name": "filemeta_v0", "key": "/From server"}])
        await poll(
            lambda: asyncio.sleep(0, (directory / "From server").exists()),
            lambda found: not found,
            what="the server's removal on disk",
        )
        await asyncio.sleep(1.0)
        assert not (directory / "From server").exists()
        assert "/From server" not in await plugin.get_map("filemeta_v0")
    finally:
        await sync.stop()
