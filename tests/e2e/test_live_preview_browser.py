"""Live preview, from outside: a person in headless Chromium turns it on; headings, emphasis, links and
tasks read as rendered off the cursor's line and as markdown on it; a task's checkbox ticks the task for
everyone (an npm y-websocket client sees the text change); an assistant's suggestion (the official MCP SDK
client) is shown and accepted in live preview as in source; the choice survives a reload. A reader who may
not edit ticks nothing."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, call, open_editor, signed_in_context
from .conftest import YClientFactory
from .notify_clients import Heard, sdk_client
from .relay import Relay

pytestmark = pytest.mark.e2e

FOLDER, WRITER, READER = "Preview", "lena", "rory"
NOTE = (
    "# Plan\n\nSome *soft* words and [[Other]].\n\n- [ ] water the plants\n- [x] feed the cat\n\n"
    "| Who | Task |\n|---|---|\n| Ana | water |\n\nThe quick brown fox.\n"
)
OTHER = "# Other\n\nNothing links from here yet.\n"  # Backlinks of Plan start empty
CARD = "---\nstatus: draft\ntags:\n  - biology\n---\n# Card\n"
_MARKER = "E2E-PREVIEW "
SCREENSHOTS = Path(os.environ.get("LENSRELAY_SCREENSHOTS", "/tmp/lensrelay-screenshots"))
_SETUP = """
import json
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={folder!r})
lena = User.objects.create_user({writer!r}, password={password!r}, is_staff=True)
lena.groups.add(Group.objects.get(name="Reviewers"), Group.objects.get(name="Editors"))
rory = User.objects.create_user({reader!r}, password={password!r}, is_staff=True)
rory.user_permissions.set(Permission.objects.filter(codename__in=["view_suggestion", "view_document"]))
print({marker!r} + json.dumps("ok"))
"""


@pytest.fixture(scope="module")
def doc_id(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> str:
    desk = tmp_path_factory.mktemp("preview")
    (desk / "Plan.md").write_text(NOTE, encoding="utf-8")
    (desk / "Other.md").write_text(OTHER, encoding="utf-8")
    (desk / "Card.md").write_text(CARD, encoding="utf-8")
    script = _SETUP.format(
        desk=str(desk), folder=FOLDER, writer=WRITER, reader=READER, password=PASSWORD, marker=_MARKER
    )
    [line] = [line for line in relay.manage("shell", "-c", script).splitlines() if line.startswith(_MARKER)]
    assert json.loads(line[len(_MARKER) :]) == "ok"
    return asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))[f"{FOLDER}/Plan.md"]


@pytest.fixture(scope="module")
def contexts(relay: Relay, browser_thread: BrowserThread, doc_id: str) -> Iterator[dict[str, BrowserContext]]:
    made = {name: signed_in_context(browser_thread, relay.http_url, name) for name in (WRITER, READER)}
    yield made
    for context in made.values():
        browser_thread.call(context.close)


def _cursor_on(page: Page, text: str) -> None:
    page.evaluate(
        """(text) => {
            const view = window.lensEditor.view;
            view.focus();
            view.dispatch({selection: {anchor: view.state.doc.toString().indexOf(text)}});
        }""",
        text,
    )


def _line(page: Page, starting: str) -> str:
    for line in page.locator(".cm-line").all_inner_texts():
        if line.startswith(starting):
            return line
    raise AssertionError(f"no line starts with {starting!r}: {page.locator('.cm-line').all_inner_texts()}")


async def test_live_preview_renders_ticks_tasks_for_everyone_and_keeps_review_working(
    relay: Relay,
    doc_id: str,
    browser_thread: BrowserThread,
    contexts: dict[str, BrowserContext],
    yclients: YClientFactory,
) -> None:
    person = await yclients(
        relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="person"
    )
    await person.wait_text(equals=NOTE)
    editor_url = f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/"
    page = await browser_thread.run(contexts[WRITER].new_page)

    def turn_on(page: Page) -> dict[str, object]:
        open_editor(page, editor_url)
        page.check("#lr-live-preview")
        page.locator(".cm-editor.lr-live-preview").wait_for()
        _cursor_on(page, "The quick")
        page.locator(".lr-pv-h1").wait_for()
        seen = {
            "heading": page.locator(".lr-pv-h1").inner_text(),
            "words": _line(page, "Some"),
            "boxes": page.locator("input.lr-pv-task").count(),
            "ticked": page.locator("input.lr-pv-task").nth(1).is_checked(),
            "cells": page.locator(".lr-pv-row-body .lr-pv-cell").all_inner_texts(),
        }
        _cursor_on(page, "Plan")  # the cursor's line shows its markdown
        seen["editing"] = page.locator(".lr-pv-h1").inner_text()
        _cursor_on(page, "The quick")
        page.locator("input.lr-pv-task").first.click()
        return seen

    seen = await browser_thread.run(lambda: turn_on(page))
    assert seen["heading"] == "Plan" and seen["editing"] == "# Plan"
    assert seen["words"] == "Some soft words and Other."
    assert seen["boxes"] == 2 and seen["ticked"] is True
    assert seen["cells"] == ["Ana", "water"]
    ticked = await person.wait_text(contains="- [x] water the plants")
    assert ticked == NOTE.replace("- [ ] water", "- [x] water")

    # An assistant's suggestion shows as a tracked change and is accepted in live preview.
    async with sdk_client(relay.http_url, relay.tokens["suggest"], Heard()) as assistant:
        path = f"{FOLDER}/Plan.md"
        await call(assistant, "read", {"file_path": path})
        answer = await call(
            assistant, "edit", {"file_path": path, "old_string": "quick", "new_string": "slow"}
        )
        uid = re.search(r"\(suggestion ([0-9a-f]+), pending", answer).group(1)  # type: ignore[union-attr]

    def accept(page: Page) -> str:
        button = page.locator(f"button.lr-accept[data-suggestion='{uid}']")
        button.wait_for()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 800})
        page.screenshot(path=str(SCREENSHOTS / "editor-live-preview-1280.png"))
        shown = _line(page, "The ")
        button.click()
        return shown

    shown = await browser_thread.run(lambda: accept(page))
    assert "slow" in shown and "quick" in shown  # both sides of the change are on screen
    settled = await person.wait_text(contains="The slow brown fox.")
    assert "{++" not in settled

    # The choice is kept; turning it off shows the markdown again.
    def reload_and_off(page: Page) -> tuple[bool, str]:
        open_editor(page, editor_url)
        kept = page.is_checked("#lr-live-preview") and page.locator(".cm-editor.lr-live-preview").count() == 1
        page.uncheck("#lr-live-preview")
        return kept, _line(page, "# ")

    kept, heading = await browser_thread.run(lambda: reload_and_off(page))
    assert kept and heading == "# Plan"
    await browser_thread.run(page.close)

    # A reader's checkbox ticks nothing.
    reader = await browser_thread.run(contexts[READER].new_page)

    def reader_clicks(page: Page) -> str:
        open_editor(page, editor_url)
        page.check("#lr-live-preview")
        _cursor_on(page, "The slow")
        page.locator("input.lr-pv-task").nth(1).click()
        page.wait_for_timeout(300)
        return str(page.evaluate("() => window.lensEditor.view.state.doc.toString()"))

    assert await browser_thread.run(lambda: reader_clicks(reader)) == settled
    assert await person.text() == settled
    await browser_thread.run(reader.close)


async def test_on_a_phone_the_text_is_full_width_and_the_tree_is_a_drawer(
    relay: Relay, doc_id: str, browser_thread: BrowserThread, contexts: dict[str, BrowserContext]
) -> None:
    editor_url = f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/"
    page = await browser_thread.run(contexts[WRITER].new_page)

    def on_a_phone(page: Page) -> dict[str, object]:
        page.set_viewport_size({"width": 390, "height": 844})
        open_editor(page, editor_url)
        text = page.locator("#lr-editor .cm-content").bounding_box()
        tree = page.locator("#lr-tree").bounding_box()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "editor-phone-390.png"))
        seen: dict[str, object] = {"text": text, "tree_closed": tree}
        page.click("button[data-drawer='lr-tree']")
        page.wait_for_timeout(400)  # the drawer slides in
        seen["tree_open"] = page.locator("#lr-tree").bounding_box()
        seen["expanded"] = page.get_attribute("button[data-drawer='lr-tree']", "aria-expanded")
        page.screenshot(path=str(SCREENSHOTS / "editor-phone-390-tree.png"))
        page.keyboard.press("Escape")
        page.wait_for_timeout(400)
        seen["tree_escaped"] = page.locator("#lr-tree").bounding_box()
        page.click("button[data-drawer='lr-tree']")
        with page.expect_navigation():
            page.click("#lr-tree li[data-path='/Other.md'] a")
        open_editor(page, page.url)
        seen["opened"] = page.evaluate("() => window.lensEditor.view.state.doc.toString()")
        return seen

    seen = await browser_thread.run(lambda: on_a_phone(page))
    text, closed, opened, escaped = (seen[k] for k in ("text", "tree_closed", "tree_open", "tree_escaped"))
    assert isinstance(text, dict) and isinstance(closed, dict) and isinstance(opened, dict)
    assert isinstance(escaped, dict)
    assert text["width"] >= 300, text  # the note takes the width of the phone
    assert closed["x"] + closed["width"] <= 1, closed  # the tree waits off screen
    assert opened["x"] >= 0 and opened["width"] <= 390, opened
    assert seen["expanded"] == "true"
    assert escaped["x"] + escaped["width"] <= 1, escaped
    assert seen["opened"] == OTHER
    await browser_thread.run(page.close)


async def test_properties_show_the_front_matter_as_fields_that_write_the_yaml(
    relay: Relay,
    doc_id: str,
    browser_thread: BrowserThread,
    contexts: dict[str, BrowserContext],
    yclients: YClientFactory,
) -> None:
    paths = await relay.document_paths(relay.tokens["edit"], folder=FOLDER)
    card_id = paths[f"{FOLDER}/Card.md"]
    person = await yclients(
        relay.doc_url(card_id), card_id, params={"token": relay.tokens["edit"]}, label="person"
    )
    await person.wait_text(equals=CARD)
    url = f"{relay.http_url}/admin/suggestions/suggestion/document/{card_id}/edit/"
    page = await browser_thread.run(contexts[WRITER].new_page)

    def edit_properties(page: Page) -> dict[str, object]:
        open_editor(page, url)
        panel = page.locator("#lr-properties")
        panel.wait_for()
        seen = {
            "open": panel.get_attribute("open") is not None,
            "status": page.input_value("input[data-property='status']"),
            "tags": page.input_value("input[data-property='tags']"),
        }
        page.fill("input[data-property='status']", "in review: soon")
        page.press("input[data-property='status']", "Enter")
        page.fill("input[data-property='tags']", "biology, cells")
        page.press("input[data-property='tags']", "Enter")
        page.fill(".lr-property-add input[name=key]", "owner")
        page.fill(".lr-property-add input[name=value]", "Ana")
        page.click(".lr-property-add button")
        page.fill(".lr-property-add input[name=key]", "bad: name")
        page.fill(".lr-property-add input[name=value]", "x")
        page.click(".lr-property-add button")
        seen["refused"] = page.inner_text("#lr-status")
        return seen

    seen = await browser_thread.run(lambda: edit_properties(page))
    assert seen == {
        "open": True,
        "status": "draft",
        "tags": "biology",
        "refused": seen["refused"],
    }
    assert "name" in str(seen["refused"])
    expected = '---\nstatus: "in review: soon"\ntags:\n  - biology\n  - cells\nowner: Ana\n---\n# Card\n'
    assert await person.wait_text(equals=expected) == expected
    await browser_thread.run(page.close)

    reader = await browser_thread.run(contexts[READER].new_page)

    def reader_sees(page: Page) -> tuple[bool, int]:
        open_editor(page, url)
        page.locator("input[data-property='owner']").wait_for()
        return page.is_disabled("input[data-property='owner']"), page.locator(".lr-property-add").count()

    assert await browser_thread.run(lambda: reader_sees(reader)) == (True, 0)
    await browser_thread.run(reader.close)


async def test_the_outline_and_backlinks_panels_lead_around_the_folder(
    relay: Relay,
    doc_id: str,
    browser_thread: BrowserThread,
    contexts: dict[str, BrowserContext],
    yclients: YClientFactory,
) -> None:
    url = f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/"
    page = await browser_thread.run(contexts[WRITER].new_page)
    paths = await relay.document_paths(relay.tokens["edit"], folder=FOLDER)
    other_id = paths[f"{FOLDER}/Other.md"]
    other = await yclients(
        relay.doc_url(other_id), other_id, params={"token": relay.tokens["edit"]}, label="other"
    )
    linked = OTHER + "\nSee [[Plan]].\n"

    def before(page: Page) -> list[str]:
        open_editor(page, url)
        page.locator("#lr-backlinks li").first.wait_for()
        return page.locator("#lr-backlinks li").all_inner_texts()

    assert await browser_thread.run(lambda: before(page)) == ["No note links here."]
    # Someone links Other to Plan while the page is open: its Backlinks follow.
    await other.insert(len(OTHER), "\nSee [[Plan]].\n")

    def panels(page: Page) -> dict[str, object]:
        # The server indexes the link a moment after the edit; the folder document brings it here.
        page.locator("#lr-backlinks a:has-text('Other.md')").wait_for()
        seen: dict[str, object] = {
            "outline": page.locator("#lr-outline .lr-outline-heading").all_inner_texts(),
            "backlinks": page.locator("#lr-backlinks li").all_inner_texts(),
        }
        _cursor_on(page, "The ")
        page.click("#lr-outline .lr-outline-heading:has-text('Plan')")
        seen["head"] = page.evaluate("() => window.lensEditor.view.state.selection.main.head")
        with page.expect_navigation():
            page.click("#lr-backlinks a:has-text('Other.md')")
        page.wait_for_selector("#lr-editor[data-synced=true]")
        seen["opened"] = page.evaluate("() => window.lensEditor.view.state.doc.toString()")
        page.locator("#lr-outline .lr-outline-heading").first.wait_for()  # drawn a moment after the text
        seen["other_outline"] = page.locator("#lr-outline .lr-outline-heading").all_inner_texts()
        return seen

    seen = await browser_thread.run(lambda: panels(page))
    assert seen["outline"] == ["Plan"] and seen["backlinks"] == ["Other.md"]
    assert seen["head"] == 0
    assert seen["opened"] == linked and seen["other_outline"] == ["Other"]
    await browser_thread.run(page.close)
