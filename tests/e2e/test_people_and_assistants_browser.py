"""People and an assistant on one note, from outside: three Chromium contexts (an editor who types live, a
person who may only suggest, a reviewer) beside the official MCP SDK client and an npm y-websocket client.
The assistant suggests; the suggest-only person types and deletes, and every view names them; the reviewer
changes the assistant's proposal and accepts it, and everyone sees the revised text; the assistant's
`list_suggestions` shows the change it was given; Undo brings its proposal back for everyone."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, call, signed_in_context
from .conftest import YClientFactory
from .notify_clients import Heard, sdk_client
from .relay import Relay
from .test_suggesting_browser import _open_editor, _type_at

pytestmark = pytest.mark.e2e

FOLDER = "Studio"
EDITOR, SUGGESTER, REVIEWER = "eve", "sid", "ria"
NOTE = "# Brief\n\nThe quick brown fox jumps over the lazy dog.\n"
_MARKER = "E2E-TOGETHER "
_SETUP = """
import json
from django.contrib.auth.models import Group, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={folder!r})
for name, group in (({editor!r}, "Editors"), ({suggester!r}, "Suggesters"), ({reviewer!r}, "Reviewers")):
    user = User.objects.create_user(name, password={password!r}, is_staff=True)
    user.groups.add(Group.objects.get(name=group))
print({marker!r} + json.dumps("ok"))
"""


@pytest.fixture(scope="module")
def doc_id(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> str:
    desk = tmp_path_factory.mktemp("studio")
    (desk / "Brief.md").write_text(NOTE, encoding="utf-8")
    script = _SETUP.format(
        desk=str(desk),
        folder=FOLDER,
        editor=EDITOR,
        suggester=SUGGESTER,
        reviewer=REVIEWER,
        password=PASSWORD,
        marker=_MARKER,
    )
    assert any(line.startswith(_MARKER) for line in relay.manage("shell", "-c", script).splitlines())
    return asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))[f"{FOLDER}/Brief.md"]


@pytest.fixture(scope="module")
def contexts(relay: Relay, browser_thread: BrowserThread, doc_id: str) -> Iterator[dict[str, BrowserContext]]:
    made = {
        name: signed_in_context(browser_thread, relay.http_url, name)
        for name in (EDITOR, SUGGESTER, REVIEWER)
    }
    yield made
    for context in made.values():
        browser_thread.call(context.close)


def _shown(page: Page) -> tuple[str, str]:
    """The note's text in the page's editor and what the page shows of it (labels, not metadata)."""
    return (
        str(page.evaluate("() => window.lensEditor.view.state.doc.toString()")),
        str(page.inner_text("#lr-editor")),
    )


def _wait_in(page: Page, needle: str) -> tuple[str, str]:
    for _ in range(100):
        text, shown = _shown(page)
        if needle in text:
            return text, shown
        page.wait_for_timeout(50)
    raise AssertionError(f"{needle!r} never reached the page: {_shown(page)[0]!r}")


async def test_an_editor_a_suggester_a_reviewer_and_an_assistant_on_one_note(
    relay: Relay,
    doc_id: str,
    browser_thread: BrowserThread,
    contexts: dict[str, BrowserContext],
    yclients: YClientFactory,
) -> None:
    node = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="node")
    await node.wait_text(equals=NOTE)
    editor_url = f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/"
    pages = {name: await browser_thread.run(contexts[name].new_page) for name in contexts}
    await browser_thread.run(lambda: _open_editor(pages[EDITOR], editor_url))

    async with sdk_client(relay.http_url, relay.tokens["suggest"], Heard()) as assistant:
        path = f"{FOLDER}/Brief.md"
        await call(assistant, "read", {"file_path": path})
        answer = await call(
            assistant, "edit", {"file_path": path, "old_string": "quick brown", "new_string": "slow red"}
        )
        found = re.search(r"\(suggestion ([0-9a-f]+), pending", answer)
        assert found, answer
        uid = found.group(1)
        proposal_text = await node.wait_text(contains="slow red++}")

        # The suggest-only person types and deletes: tracked changes under their name.
        def suggest(page: Page) -> None:
            _open_editor(page, editor_url)
            assert (
                page.locator("#lr-suggesting").is_checked() and page.locator("#lr-suggesting").is_disabled()
            )
            _type_at(page, "jumps", " high")
            _type_at(page, "the lazy", "", backspaces=5)

        await browser_thread.run(lambda: suggest(pages[SUGGESTER]))
        seen = await node.wait_text(contains=" lazy--}")
        await node.wait_text(contains=" high++}")
        seen = await node.text()
        assert re.search(r'\{\+\+\{"author":"sid",[^}]*\}@@ high\+\+\}', seen), seen
        assert re.search(r'\{--\{"author":"sid",[^}]*\}@@ lazy--\}', seen), seen
        # The editor's page, live: the same marks, the person's name shown, the metadata not.
        text, shown = await browser_thread.run(lambda: _wait_in(pages[EDITOR], " lazy--}"))
        assert '"author":"sid"' in text and "sid" in shown and '"timestamp"' not in shown
        # The assistant reads the note as if every suggestion were accepted, and sees who proposed each.
        for _ in range(50):  # the person's rows follow their typing by a moment
            read = await call(assistant, "read", {"file_path": path})
            if "(sid)" in read:
                break
            await asyncio.sleep(0.1)
        assert "The slow red fox jumps high over the dog." in read
        assert "(sid)" in read and f"id {uid}" in read

        # The reviewer changes the assistant's proposal and accepts it.
        def revise_and_accept(page: Page) -> str:
            page.goto(f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/review/")
            page.click(f"#revise-{uid} summary")
            field = page.locator(f"#revision-{uid}-1")
            assert field.input_value() == "slow red"
            field.fill("swift russet")
            with page.expect_navigation():
                page.click(f"#card-{uid} button.accept")
            return page.inner_text("ul.messagelist")

        told = str(await browser_thread.run(lambda: revise_and_accept(pages[REVIEWER])))
        assert "with your changes: {--slow red--}{++swift russet++}" in told
        settled = await node.wait_text(contains="The swift russet fox")
        assert "slow red" not in settled and " high++}" in settled  # the person's marks stay pending
        text, _ = await browser_thread.run(lambda: _wait_in(pages[EDITOR], "The swift russet fox"))
        assert text == settled
        listed = await call(assistant, "list_suggestions", {"path": path})
        assert f"{uid} ACCEPTED" in listed
        assert (
            "the reviewer changed your text before accepting it: {--slow red--}{++swift russet++}" in listed
        )

        # Undo: the assistant's proposal is back for everyone, the person's marks untouched.
        def undo(page: Page) -> None:
            with page.expect_navigation():
                page.click(f"#recent-{uid} button.undo")

        await browser_thread.run(lambda: undo(pages[REVIEWER]))
        back = await node.wait_text(contains="slow red++}")
        assert "swift russet" not in back and " high++}" in back and " lazy--}" in back
        assert back.replace(" high", "").count("{++") == proposal_text.count("{++") + 1
        text, _ = await browser_thread.run(lambda: _wait_in(pages[EDITOR], "slow red++}"))
        assert text == back
        listed = await call(assistant, "list_suggestions", {"path": path})
        assert f"{uid} PENDING" in listed and "Accepted with changes" not in listed
    for page in pages.values():
        await browser_thread.run(page.close)
