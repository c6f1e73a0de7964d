"""Delete -> trash -> restore end to end with real clients: an npm y-websocket client removing an entry (the
server puts it back under /_trash/), an editor deleting and restoring in the admin in headless Chromium,
and an assistant's delete suggestion (the official `mcp` client) accepted in the admin. Links survive
every round trip (`get_links`, and `backlinks_v0` as a Relay client reads it)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, AdminPage, BrowserThread, call, mcp_client, signed_in_context
from .conftest import YClientFactory
from .relay import Relay, poll
from .yclient import YClient

pytestmark = pytest.mark.e2e

FOLDER = "Bin"
EDITOR = "editor"
_MARKER = "E2E-TRASH "
TIMEOUT = 10.0
NOTES = {
    "Target.md": "# Target\n\nLinked from elsewhere.\n",
    "Linker.md": "# Linker\n\nSee [[Target]].\n",
    "Solo.md": "# Solo\n\nNobody links here.\n",
    "Proposed.md": "# Proposed\n\nAn assistant thinks this can go.\n",
    "Leaf.md": "# Leaf\n\nPoints at [[Proposed]].\n",
    "Renamee.md": "# Renamee\n\nAbout to get a new name.\n",
    "Pointer.md": "# Pointer\n\nSee [[Renamee]].\n",
}

_SETUP_SCRIPT = """
import json
from django.contrib.auth.models import User
from django.core.management import call_command
from lensrelay.access.tokens import token_create
call_command("import_vault", {vault!r}, folder={folder!r})
_, raw = token_create(name="claude", role="suggest")
User.objects.create_superuser({editor!r}, "editor@example.org", {password!r})
print({marker!r} + json.dumps(raw))
"""


@dataclass(frozen=True)
class Bin:
    relay: Relay
    assistant_token: str
    writer_token: str
    folder_doc: str
    browser: BrowserThread


@pytest.fixture(scope="module")
def trash_bin(relay: Relay, browser_thread: BrowserThread, tmp_path_factory: pytest.TempPathFactory) -> Bin:
    vault = tmp_path_factory.mktemp("trash-vault")
    for name, text in NOTES.items():
        (vault / name).write_text(text, encoding="utf-8")
    script = _SETUP_SCRIPT.format(
        vault=str(vault), folder=FOLDER, editor=EDITOR, password=PASSWORD, marker=_MARKER
    )
    out = relay.manage("shell", "-c", script)
    raw = json.loads(next(line for line in out.splitlines() if line.startswith(_MARKER))[len(_MARKER) :])
    writer = relay.tokens["edit"]
    folder_doc = asyncio.run(relay.folder_doc_id(writer, folder=FOLDER))
    return Bin(relay, raw, writer, folder_doc, browser_thread)


@pytest.fixture(scope="module")
def editor_context(trash_bin: Bin) -> Iterator[BrowserContext]:
    context = signed_in_context(trash_bin.browser, trash_bin.relay.http_url, EDITOR)
    yield context
    trash_bin.browser.call(context.close)


@pytest.fixture
async def editor(trash_bin: Bin, editor_context: BrowserContext) -> AsyncIterator[AdminPage]:
    admin = await AdminPage.open(trash_bin.browser, trash_bin.relay.http_url, editor_context)
    yield admin
    await admin.close()


async def folder_client(trash_bin: Bin, yclients: YClientFactory, label: str) -> YClient:
    url = trash_bin.relay.doc_url(trash_bin.folder_doc)
    return await yclients(url, trash_bin.folder_doc, params={"token": trash_bin.writer_token}, label=label)


async def listed(trash_bin: Bin) -> dict[str, str]:
    return await trash_bin.relay.document_paths(trash_bin.writer_token, folder=FOLDER)


async def wait_listed(trash_bin: Bin, path: str, *, present: bool) -> dict[str, str]:
    return await poll(
        lambda: listed(trash_bin),
        lambda paths: (f"{FOLDER}/{path}" in paths) == present,
        timeout=TIMEOUT,
        what=f"{path} {'listed' if present else 'gone'}",
    )


async def restore_in_admin(editor: AdminPage, base_url: str, name: str) -> list[str]:
    """Find the trashed note in the admin's trash filter, select it and run "Restore"."""

    def restore(page: Page) -> None:
        page.goto(f"{base_url}/admin/lensrelay/document/?trash=yes&q={name}")
        row = page.locator("#result_list tbody tr", has_text=f"{FOLDER}/_trash/{name}")
        assert row.count() == 1, page.content()
        row.locator("input.action-select").check()
        page.select_option("select[name=action]", "restore_selected")
        with page.expect_navigation():
            page.click("button[name=index]")

    await editor.do(restore)
    return await editor.messages("success") + await editor.messages("error")


async def test_an_entry_removed_by_a_yjs_client_lands_in_the_trash_and_the_admin_restores_it(
    trash_bin: Bin, yclients: YClientFactory, editor: AdminPage
) -> None:
    plugin = await folder_client(trash_bin, yclients, "plugin")
    observer = await folder_client(trash_bin, yclients, "observer")
    filemeta = await plugin.get_map("filemeta_v0")
    solo = filemeta["/Solo.md"]
    content_id = f"{trash_bin.folder_doc[:36]}-{solo['id']}"
    await plugin.transact(
        [
            {"op": "mapDelete", "name": "filemeta_v0", "key": "/Solo.md"},
            {"op": "mapDelete", "name": "docs", "key": "/Solo.md"},
        ]
    )
    # The server puts it back, under /_trash/, same id, stamped: every client sees it there.
    await observer.wait_map("filemeta_v0", "/_trash/Solo.md")
    trashed = (await observer.get_map("filemeta_v0"))["/_trash/Solo.md"]
    assert trashed["id"] == solo["id"] and trashed["type"] == "markdown"
    assert isinstance(trashed["trashed_at"], int | float) and trashed["trashed_at"] > 1.7e12
    assert "/Solo.md" not in await observer.get_map("filemeta_v0")
    await wait_listed(trash_bin, "Solo.md", present=False)
    assert content_id not in (await listed(trash_bin)).values()  # the trash is not listed either
    assert await trash_bin.relay.doc_text(content_id, token=trash_bin.writer_token) == NOTES["Solo.md"]

    messages = await restore_in_admin(editor, trash_bin.relay.http_url, "Solo.md")
    assert messages == [f"Restored {FOLDER}/Solo.md."]
    await observer.wait_map("filemeta_v0", "/Solo.md")
    restored = (await observer.get_map("filemeta_v0"))["/Solo.md"]
    assert restored["id"] == solo["id"] and "trashed_at" not in restored
    assert (await wait_listed(trash_bin, "Solo.md", present=True))[f"{FOLDER}/Solo.md"] == content_id


async def test_the_admin_refuses_a_linked_delete_names_the_linker_and_forced_it_round_trips(
    trash_bin: Bin, yclients: YClientFactory, editor: AdminPage
) -> None:
    base = trash_bin.relay.http_url
    observer = await folder_client(trash_bin, yclients, "observer")
    target_uuid = (await observer.get_map("filemeta_v0"))["/Target.md"]["id"]
    linker_uuid = (await observer.get_map("filemeta_v0"))["/Linker.md"]["id"]

    def open_delete(page: Page) -> str:
        page.goto(f"{base}/admin/lensrelay/document/?q=Target.md")
        page.locator("#result_list tbody tr", has_text=f"{FOLDER}/Target.md").locator("th a").click()
        page.click("a.deletelink")
        return page.locator("#linking-notes").inner_text()

    assert await editor.do(open_delete) == f"{FOLDER}/Linker.md"

    def submit(page: Page, force: bool) -> None:
        if force:
            page.check("#id_force")
        with page.expect_navigation():
            page.click("input[type=submit][value='Move to the trash']")

    await editor.do(lambda page: submit(page, False))
    [error] = await editor.messages("error")
    assert error.startswith(f"Refused: {FOLDER}/Linker.md still link")
    assert "/Target.md" in await observer.get_map("filemeta_v0")

    await editor.do(lambda page: submit(page, True))
    assert await editor.messages("success") == ["Moved 1 entry to the trash."]
    await observer.wait_map("filemeta_v0", "/_trash/Target.md")
    await observer.wait_map("backlinks_v0", target_uuid, present=False)
    async with mcp_client(base, trash_bin.assistant_token) as client:
        links = await call(client, "get_links", {"file_path": f"{FOLDER}/Linker.md"})
        assert "[[Target]]" in links.split("Unresolved links")[1]
        globbed = await call(client, "glob", {"pattern": "**/*"})
        assert "Target.md" not in globbed and "_trash" not in globbed

        messages = await restore_in_admin(editor, base, "Target.md")
        assert messages == [f"Restored {FOLDER}/Target.md."]
        await observer.wait_map("backlinks_v0", target_uuid, value=[linker_uuid])
        links = await call(client, "get_links", {"file_path": f"{FOLDER}/Target.md"})
        assert f"- {FOLDER}/Linker.md" in links.split("Forward links")[0]


async def test_an_accepted_mcp_delete_suggestion_trashes_and_the_admin_restores(
    trash_bin: Bin, yclients: YClientFactory, editor: AdminPage
) -> None:
    base = trash_bin.relay.http_url
    observer = await folder_client(trash_bin, yclients, "observer")
    async with mcp_client(base, trash_bin.assistant_token) as client:
        refused = await client.call_tool("delete", {"file_path": f"{FOLDER}/Proposed.md"})
        assert refused.is_error
        text = "\n".join(getattr(block, "text", "") for block in refused.content)
        assert f"{FOLDER}/Leaf.md" in text and "force" in text
        schema = next(t for t in (await client.list_tools()).tools if t.name == "delete").input_schema
        assert schema["properties"]["force"]["type"] == "boolean"

        answer = await call(client, "delete", {"file_path": f"{FOLDER}/Proposed.md", "force": True})
        match = re.search(r"\(suggestion ([0-9a-f]+), pending", answer)
        assert match, answer
        await editor.open_suggestion(match.group(1))
        await editor.decide("accept")
        assert await editor.messages("error") == []
        await observer.wait_map("filemeta_v0", "/_trash/Proposed.md")
        globbed = await call(client, "glob", {"pattern": "**/*.md"})
        assert "Proposed.md" not in globbed
        read: Any = await client.call_tool("read", {"file_path": f"{FOLDER}/_trash/Proposed.md"})
        assert read.is_error  # the trash is not readable over MCP

        messages = await restore_in_admin(editor, base, "Proposed.md")
        assert messages == [f"Restored {FOLDER}/Proposed.md."]
        await poll(
            lambda: call(client, "glob", {"pattern": "**/*.md"}),
            lambda found: f"{FOLDER}/Proposed.md" in found,
            timeout=TIMEOUT,
            what="restored note globbed",
        )
        read_back = await call(client, "read", {"file_path": f"{FOLDER}/Proposed.md"})
        assert "3\tAn assistant thinks this can go." in read_back
        links = await call(client, "get_links", {"file_path": f"{FOLDER}/Proposed.md"})
        assert f"- {FOLDER}/Leaf.md" in links.split("Forward links")[0]


async def test_an_admin_rename_rewrites_incoming_links_and_mcp_glob_sees_it(
    trash_bin: Bin, yclients: YClientFactory, editor: AdminPage
) -> None:
    base = trash_bin.relay.http_url
    observer = await folder_client(trash_bin, yclients, "observer")
    renamee = (await observer.get_map("filemeta_v0"))["/Renamee.md"]

    def rename(page: Page) -> None:
        page.goto(f"{base}/admin/lensrelay/document/?q=Renamee.md")
        page.locator("#result_list tbody tr", has_text=f"{FOLDER}/Renamee.md").locator("th a").click()
        page.fill("#id_path", "/Archive/Renamed.md")
        with page.expect_navigation():
            page.click("input[name=_save]")

    await editor.do(rename)
    assert await editor.messages("info") == ["Moved to /Archive/Renamed.md; 1 link(s) rewritten."]
    await observer.wait_map("filemeta_v0", "/Archive/Renamed.md", value=renamee)
    async with mcp_client(base, trash_bin.assistant_token) as client:
        globbed = await call(client, "glob", {"pattern": "**/*.md"})
        assert f"{FOLDER}/Archive/Renamed.md" in globbed and f"{FOLDER}/Renamee.md" not in globbed
        pointer = await call(client, "read", {"file_path": f"{FOLDER}/Pointer.md"})
        assert "See [[Renamed]]." in pointer
        links = await call(client, "get_links", {"file_path": f"{FOLDER}/Archive/Renamed.md"})
        assert f"- {FOLDER}/Pointer.md" in links.split("Forward links")[0]
