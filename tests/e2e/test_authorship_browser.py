"""Who wrote what in the browser editor (issue 31): the editor names its Yjs client under the person's
name in the note's `users` map, as Relay.md clients do, so an npm y-websocket client attributes the
person's typing to them; the person's Authors view shows the assistant's suggestion (made over MCP with
the official SDK) and their own text each in its author's colour, in the text or as strips in the margin,
each saying its author on hover; hidden, nothing is drawn."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, mcp_client, signed_in_context
from .conftest import YClientFactory
from .relay import Relay
from .test_review_page_browser import suggest

pytestmark = pytest.mark.e2e

FOLDER, PERSON = "Byline", "ivy"
NOTE = "# Byline\n\nThe quick fox jumps.\n"
_MARKER = "E2E-AUTHORS "
_SETUP = """
from django.contrib.auth.models import Group, User
ivy = User.objects.create_user({person!r}, password={password!r}, is_staff=True)
ivy.groups.add(Group.objects.get(name="Editors"))
print({marker!r} + "ok")
"""


@pytest.fixture(scope="module")
def doc_id(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> str:
    vault = tmp_path_factory.mktemp("byline")
    (vault / "Byline.md").write_text(NOTE, encoding="utf-8")
    relay.import_vault(vault, folder=FOLDER)
    script = _SETUP.format(person=PERSON, password=PASSWORD, marker=_MARKER)
    assert _MARKER + "ok" in relay.manage("shell", "-c", script)
    return asyncio.run(relay.doc_id(relay.tokens["edit"], folder=FOLDER, path="/Byline.md"))


@pytest.fixture(scope="module")
def context(relay: Relay, browser_thread: BrowserThread, doc_id: str) -> Iterator[BrowserContext]:
    signed_in = signed_in_context(browser_thread, relay.http_url, PERSON)
    yield signed_in
    browser_thread.call(signed_in.close)


async def test_the_editor_names_its_writer_and_shows_each_authors_text(
    relay: Relay,
    doc_id: str,
    browser_thread: BrowserThread,
    context: BrowserContext,
    yclients: YClientFactory,
) -> None:
    url = f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/"
    holder: dict[str, Page] = {}

    def open_and_type() -> None:
        page = context.new_page()
        holder["page"] = page
        page.goto(url)
        page.wait_for_selector("#lr-editor[data-synced='true']")
        page.evaluate(
            "() => { const v = window.lensEditor.view; const at = v.state.doc.length; "
            "v.dispatch({changes: {from: at, insert: 'Ivy was here.\\n'}}); }"
        )

    await browser_thread.run(open_and_type)
    reader = await yclients(
        relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="reader"
    )
    await reader.wait_text(contains="Ivy was here.")
    users = await reader.wait_map("users", PERSON)
    runs = await reader.authorship()
    assert any(r["user"] == PERSON and "Ivy was here." in r["text"] for r in runs), (runs, users)

    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        await suggest(assistant, f"{FOLDER}/Byline.md", "quick", "swift")
    await reader.wait_text(contains="swift")

    def views() -> dict[str, Any]:
        page = holder["page"]
        page.wait_for_function("() => window.lensEditor.view.state.doc.toString().includes('swift')")
        found: dict[str, Any] = {}
        for mode in ("inline", "gutter", "off"):
            page.select_option("#lr-authorship", mode)
            page.wait_for_timeout(100)
            found[mode] = {
                "spans": page.eval_on_selector_all(
                    ".lr-written", "els => els.map(e => [e.dataset.author, e.textContent, e.title])"
                ),
                "strips": page.eval_on_selector_all(".lr-author-strip", "els => els.map(e => e.title)"),
            }
        page.reload()
        page.wait_for_selector("#lr-editor[data-synced='true']")
        found["kept"] = page.eval_on_selector("#lr-authorship", "e => e.value")
        return found

    found = await browser_thread.run(views)
    inline = found["inline"]["spans"]
    assert [PERSON, "Ivy was here.", f"Written by {PERSON}"] in [list(s) for s in inline], inline
    assert any(a == "suggest · mcp" and "swift" in t for a, t, _ in inline), inline
    # text no one registered (the imported note) is said to be so, never given to someone
    assert any(a == "someone not named" and "The " in t for a, t, _ in inline), inline
    assert found["inline"]["strips"] == []
    strips = found["gutter"]["strips"]
    assert f"Written by {PERSON}" in strips and "Written by suggest · mcp" in strips, strips
    assert found["gutter"]["spans"] == [] and found["off"] == {"spans": [], "strips": []}
    assert found["kept"] == "off"  # the last choice is remembered
