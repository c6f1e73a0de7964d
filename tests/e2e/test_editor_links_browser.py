"""Links and ways in, in Chromium: `[[` completes the folder's notes (and `[[Note#` its headings) and writes
the link; Ctrl-click opens the note a link reaches (at its heading), in its folder or another; a link
reaching nothing is marked unresolved; Ctrl-O's quick switcher opens a note from part of its name; "Open
the knowledge base" on the admin home and on `/` opens the editor at the note opened last."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, signed_in_context
from .relay import Relay

pytestmark = pytest.mark.e2e

FOLDER = "Links"
_MARKER = "E2E-LINKS "
_SETUP = """
import json
from django.contrib.auth.models import Group, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={folder!r})
lin = User.objects.create_user("lin", password={password!r}, is_staff=True)
lin.groups.add(Group.objects.get(name="Editors"))
print({marker!r} + json.dumps("ok"))
"""
WELCOME = "# Welcome\n\nSee [[Oak]], [[Nowhere]] and [[Oak#Roots]].\n"
OAK = "# Oak\n\n## Roots\n\nDeep.\n"
# Two more folders: a note of Across links into Beyond, from the vault's root, climbing out, by name.
ACROSS, BEYOND = "Across", "Beyond"
_IMPORT = """
import json
from django.core.management import call_command
for desk, folder in {vaults!r}:
    call_command("import_vault", desk, folder=folder)
print({marker!r} + json.dumps("ok"))
"""
START = "# Start\n\n[[Beyond/Target]] [[../Beyond/Target]] [[Target]] [[Nowhere]]\n"


@pytest.fixture(scope="module")
def doc_ids(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    desk = tmp_path_factory.mktemp("links")
    (desk / "Welcome.md").write_text(WELCOME, encoding="utf-8")
    (desk / "Oak.md").write_text(OAK, encoding="utf-8")
    (desk / "Deep").mkdir()
    (desk / "Deep" / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    script = _SETUP.format(desk=str(desk), folder=FOLDER, password=PASSWORD, marker=_MARKER)
    assert any(line.startswith(_MARKER) for line in relay.manage("shell", "-c", script).splitlines())
    return asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))


@pytest.fixture(scope="module")
def context(relay: Relay, browser_thread: BrowserThread, doc_ids: dict[str, str]) -> Iterator[BrowserContext]:
    made = signed_in_context(browser_thread, relay.http_url, "lin")
    yield made
    browser_thread.call(made.close)


@pytest.fixture(scope="module")
def across_ids(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    across, beyond = tmp_path_factory.mktemp("across"), tmp_path_factory.mktemp("beyond")
    (across / "Start.md").write_text(START, encoding="utf-8")
    (beyond / "Deep").mkdir()
    (beyond / "Deep" / "Target.md").write_text("# Target\n", encoding="utf-8")
    (beyond / "Target.md").write_text("# Target\n\nReached.\n", encoding="utf-8")
    vaults = [(str(across), ACROSS), (str(beyond), BEYOND)]
    script = _IMPORT.format(vaults=vaults, marker=_MARKER)
    assert any(line.startswith(_MARKER) for line in relay.manage("shell", "-c", script).splitlines())
    token = relay.tokens["edit"]
    return {
        **asyncio.run(relay.document_paths(token, folder=ACROSS)),
        **asyncio.run(relay.document_paths(token, folder=BEYOND)),
    }


def _edit_url(relay: Relay, doc_id: str) -> str:
    return f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/"


def _open(page: Page, url: str) -> None:
    """The editor at ``url``, synced, with the folder's tree listed (links resolve against it)."""
    page.goto(url)
    page.wait_for_selector("#lr-editor[data-synced=true]")
    page.wait_for_selector("#lr-tree li a")


def _text(page: Page) -> str:
    return str(page.evaluate("() => window.lensEditor.view.state.doc.toString()"))


def _type_at_the_end(page: Page, typed: str) -> None:
    page.click("#lr-editor .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type(typed)


def _pick(page: Page, label: str) -> None:
    """Take the completion list's first choice once it is ``label`` (what was typed narrowed the list)."""
    page.wait_for_function(
        "(label) => document.querySelector('.cm-tooltip-autocomplete li[role=option][aria-selected=true]')"
        "?.textContent.startsWith(label)",
        arg=label,
    )
    # CodeMirror ignores Enter for 75 ms after the list changed (interactionDelay: no accidental picks).
    page.wait_for_timeout(200)
    page.keyboard.press("Enter")


async def test_double_bracket_completes_the_folders_notes_and_a_notes_headings(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, context: BrowserContext
) -> None:
    def scenario() -> tuple[list[str], str]:
        page = context.new_page()
        _open(page, _edit_url(relay, doc_ids[f"{FOLDER}/Deep/Plan.md"]))
        _type_at_the_end(page, "\n[[")
        page.locator(".cm-tooltip-autocomplete li[role=option]").first.wait_for()
        offered = [t.split("/")[0].strip() for t in page.locator(".cm-completionLabel").all_inner_texts()]
        page.keyboard.type("wel")
        _pick(page, "Welcome")
        page.keyboard.type(" and [[Oak#")
        page.locator(".cm-tooltip-autocomplete li[role=option]", has_text="Roots").wait_for()
        page.keyboard.type("ro")
        _pick(page, "Roots")
        text = _text(page)
        page.close()
        return offered, text

    offered, text = await browser_thread.run(scenario)
    assert {"Oak", "Plan", "Welcome"} <= set(offered), offered
    assert text.endswith("\n[[Welcome]] and [[Oak#Roots]]"), text
    assert not text.endswith("]]]]")


async def test_ctrl_click_follows_a_link_and_an_unresolved_one_is_marked(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, context: BrowserContext
) -> None:
    oak_url = _edit_url(relay, doc_ids[f"{FOLDER}/Oak.md"])

    def scenario() -> dict[str, object]:
        page = context.new_page()
        _open(page, _edit_url(relay, doc_ids[f"{FOLDER}/Welcome.md"]))
        page.wait_for_selector(".lr-wikilink-unresolved")
        seen: dict[str, object] = {
            "unresolved": page.locator(".lr-wikilink-unresolved").all_inner_texts(),
            "resolved": page.locator(".lr-wikilink:not(.lr-wikilink-unresolved)").all_inner_texts(),
        }
        # A plain click only places the cursor; Ctrl-click opens the note.
        page.locator(".lr-wikilink", has_text="[[Oak]]").click()
        seen["plain click stays"] = page.url
        with page.expect_navigation():
            page.locator(".lr-wikilink", has_text="[[Oak]]").click(modifiers=["Control"])
        seen["opened"] = page.url
        page.wait_for_selector("#lr-editor[data-synced=true]")
        seen["path"] = page.inner_text(".editor-path")
        # At its heading: the note opens at the heading's line.
        page.go_back()
        page.wait_for_selector(".lr-wikilink-unresolved")
        with page.expect_navigation():
            page.locator(".lr-wikilink", has_text="[[Oak#Roots]]").click(modifiers=["Control"])
        seen["at heading"] = page.url
        page.wait_for_selector("#lr-editor[data-synced=true]")
        page.wait_for_function("() => window.lensEditor.view.state.selection.main.head > 0")
        seen["cursor line"] = page.evaluate(
            "() => { const s = window.lensEditor.view.state; "
            "return s.doc.lineAt(s.selection.main.head).text; }"
        )
        page.close()
        return seen

    seen = await browser_thread.run(scenario)
    assert seen["unresolved"] == ["[[Nowhere]]"], seen
    assert seen["resolved"] == ["[[Oak]]", "[[Oak#Roots]]"], seen
    assert "/edit/" in str(seen["plain click stays"]) and oak_url not in str(seen["plain click stays"])
    assert seen["opened"] == oak_url and seen["path"] == f"{FOLDER}/Oak.md"
    assert seen["at heading"] == f"{oak_url}#L3" and seen["cursor line"] == "## Roots", seen


async def test_links_into_another_folder_resolve_complete_and_open_there(
    relay: Relay,
    across_ids: dict[str, str],
    browser_thread: BrowserThread,
    context: BrowserContext,
) -> None:
    target_url = _edit_url(relay, across_ids[f"{BEYOND}/Target.md"])

    def scenario() -> dict[str, object]:
        page = context.new_page()
        _open(page, _edit_url(relay, across_ids[f"{ACROSS}/Start.md"]))
        # Marked once the other folders' listing is here: the three links reach Beyond's note.
        page.wait_for_selector(".lr-wikilink-elsewhere")
        page.wait_for_function("() => document.querySelectorAll('.lr-wikilink-elsewhere').length >= 3")
        seen: dict[str, object] = {
            "elsewhere": page.locator(".lr-wikilink-elsewhere").all_inner_texts(),
            "unresolved": page.locator(".lr-wikilink-unresolved").all_inner_texts(),
            "title": page.locator(".lr-wikilink", has_text="[[../Beyond/Target]]").get_attribute("title"),
        }
        _type_at_the_end(page, "\n[[Beyond/Deep/Tar")
        _pick(page, "Beyond/Deep/Target")
        seen["completed"] = _text(page).splitlines()[-1]
        with page.expect_navigation():
            page.locator(".lr-wikilink", has_text="[[Beyond/Target]]").click(modifiers=["Control"])
        seen["opened"] = page.url
        page.wait_for_selector("#lr-editor[data-synced=true]")
        seen["path"] = page.inner_text(".editor-path")
        page.close()
        return seen

    seen = await browser_thread.run(scenario)
    assert seen["elsewhere"] == ["[[Beyond/Target]]", "[[../Beyond/Target]]", "[[Target]]"], seen
    assert seen["unresolved"] == ["[[Nowhere]]"], seen
    assert str(seen["title"]).endswith(f"opens {BEYOND}/Target.md"), seen
    assert seen["completed"] == "[[Beyond/Deep/Target]]", seen
    assert seen["opened"] == target_url and seen["path"] == f"{BEYOND}/Target.md", seen


async def test_the_quick_switcher_opens_a_note_from_part_of_its_name(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, context: BrowserContext
) -> None:
    def scenario() -> dict[str, object]:
        page = context.new_page()
        _open(page, _edit_url(relay, doc_ids[f"{FOLDER}/Oak.md"]))
        page.click("#lr-editor .cm-content")
        page.keyboard.press("Control+o")
        page.wait_for_selector("#lr-switcher:not([hidden]) input:focus")
        seen: dict[str, object] = {"all": page.locator("#lr-switcher-list li").count()}
        page.keyboard.press("Escape")
        seen["closed"] = page.locator("#lr-switcher").is_hidden()
        seen["focus back"] = page.evaluate("() => document.activeElement.classList.contains('cm-content')")
        page.keyboard.press("Control+o")
        page.wait_for_selector("#lr-switcher:not([hidden]) input:focus")  # keys before it go to the note
        page.keyboard.type("pl")
        page.wait_for_function("() => document.querySelectorAll('#lr-switcher-list [data-index]').length < 2")
        seen["shown"] = page.locator("#lr-switcher-list li[aria-selected=true]").get_attribute("data-path")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        page.wait_for_selector("#lr-editor[data-synced=true]")
        seen["path"] = page.inner_text(".editor-path")
        # Arrows choose: with nothing typed the open note comes last, so Up from the first reaches it.
        page.keyboard.press("Control+o")
        page.wait_for_selector("#lr-switcher:not([hidden]) input:focus")
        page.keyboard.press("ArrowUp")
        seen["last"] = page.locator("#lr-switcher-list li[aria-selected=true]").get_attribute("data-path")
        page.close()
        return seen

    seen = await browser_thread.run(scenario)
    assert seen["all"] == 3 and seen["closed"] and seen["focus back"], seen
    assert seen["shown"] == "/Deep/Plan.md" and seen["path"] == f"{FOLDER}/Deep/Plan.md", seen
    assert seen["last"] == "/Deep/Plan.md", seen


async def test_the_admin_home_and_the_landing_page_open_the_note_opened_last(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, context: BrowserContext
) -> None:
    def scenario() -> list[str]:
        page = context.new_page()
        _open(page, _edit_url(relay, doc_ids[f"{FOLDER}/Oak.md"]))
        paths = []
        for start, link in (("/admin/", "#open-knowledge-base"), ("/", "#link-open")):
            page.goto(f"{relay.http_url}{start}")
            with page.expect_navigation():
                page.click(link)
            page.wait_for_selector("#lr-editor[data-synced=true]")
            paths.append(page.inner_text(".editor-path"))
        page.close()
        return paths

    assert await browser_thread.run(scenario) == [f"{FOLDER}/Oak.md", f"{FOLDER}/Oak.md"]
