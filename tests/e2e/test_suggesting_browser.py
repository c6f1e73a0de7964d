"""Suggesting mode, from outside: a person who may only suggest types and deletes in headless Chromium;
their words become suggestions under their name for an npm y-websocket client too, with rows a reviewer
(a second browser) revises, accepts and undoes. The same person's session on a raw y-websocket client is
refused when it edits plain text, and the note is unchanged."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, signed_in_context
from .conftest import YClientFactory
from .relay import Relay
from .yclient import YClient

pytestmark = pytest.mark.e2e

FOLDER, SUGGESTER, REVIEWER = "Desk", "sam", "rita"
NOTE = "# Plan\n\nThe quick brown fox jumps over the lazy dog.\n"
PAIR = "# Pair\n\nFirst line here.\nSecond line here.\n"
_MARKER = "E2E-SUGGEST "
_SETUP = """
import json
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={folder!r})
sam = User.objects.create_user({suggester!r}, password={password!r}, is_staff=True)
sam.groups.add(Group.objects.get(name="Suggesters"))
rita = User.objects.create_user({reviewer!r}, password={password!r}, is_staff=True)
rita.groups.add(Group.objects.get(name="Reviewers"))
sue = User.objects.create_user("sue", password={password!r}, is_staff=True)
sue.groups.add(Group.objects.get(name="Suggesters"))
ed = User.objects.create_user("ed", password={password!r}, is_staff=True)
ed.groups.add(Group.objects.get(name="Editors"))
print({marker!r} + json.dumps(sam.pk))
"""
_ROW = """
import json
from suggestions.models import Suggestion
row = Suggestion.objects.filter(uid={uid!r}).first()
fields = row and [row.status, row.author, row.person_id, row.proposed_insertions(), row.revision]
print({marker!r} + json.dumps(fields))
"""


def _printed(relay: Relay, script: str) -> object:
    [line] = [line for line in relay.manage("shell", "-c", script).splitlines() if line.startswith(_MARKER)]
    return json.loads(line[len(_MARKER) :])


@pytest.fixture(scope="module")
def setup(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    desk = tmp_path_factory.mktemp("desk")
    (desk / "Plan.md").write_text(NOTE, encoding="utf-8")
    (desk / "Pair.md").write_text(PAIR, encoding="utf-8")
    script = _SETUP.format(
        desk=str(desk),
        folder=FOLDER,
        suggester=SUGGESTER,
        reviewer=REVIEWER,
        password=PASSWORD,
        marker=_MARKER,
    )
    sam_id = _printed(relay, script)
    paths = asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))
    assert isinstance(sam_id, int)
    return paths[f"{FOLDER}/Plan.md"], sam_id


@pytest.fixture(scope="module")
def pair_id(relay: Relay, setup: tuple[str, int]) -> str:
    return asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))[f"{FOLDER}/Pair.md"]


@pytest.fixture(scope="module")
def signed_in(
    relay: Relay, browser_thread: BrowserThread, setup: tuple[str, int]
) -> Iterator[dict[str, BrowserContext]]:
    """The suggest-only person's and the reviewer's browser contexts, signed in."""
    contexts = {
        name: signed_in_context(browser_thread, relay.http_url, name) for name in (SUGGESTER, REVIEWER)
    }
    yield contexts
    for context in contexts.values():
        browser_thread.call(context.close)


def _open_editor(page: Page, url: str) -> None:
    page.goto(url)
    # (wait_for_function evaluates a string: the admin's CSP refuses that)
    for _ in range(100):
        if page.evaluate("() => Boolean(window.lensEditor && window.lensEditor.provider.synced)"):
            return
        page.wait_for_timeout(50)
    raise AssertionError("the editor did not sync")


def _type_at(page: Page, after: str, keys: str, *, select: int = 0, backspaces: int = 0) -> None:
    """Put the cursor right after ``after`` in the note (selecting ``select`` characters before it), then
    press Backspace and type as a person does."""
    page.evaluate(
        """([after, select]) => {
            const view = window.lensEditor.view;
            const at = view.state.doc.toString().indexOf(after) + after.length;
            view.focus();
            view.dispatch({selection: {anchor: at - select, head: at}});
        }""",
        [after, select],
    )
    for _ in range(backspaces):
        page.keyboard.press("Backspace")
    if keys:
        page.keyboard.type(keys, delay=15)


async def test_a_suggest_only_person_types_and_a_reviewer_revises_and_accepts(
    relay: Relay,
    setup: tuple[str, int],
    browser_thread: BrowserThread,
    signed_in: dict[str, BrowserContext],
    yclients: YClientFactory,
) -> None:
    doc_id, sam_id = setup
    sam_context, rita_context = signed_in[SUGGESTER], signed_in[REVIEWER]
    person = await yclients(
        relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="person"
    )
    await person.wait_text(equals=NOTE)
    editor = f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/"

    def suggest(page: Page) -> str:
        _open_editor(page, editor)
        assert page.locator("#lr-suggesting").is_checked() and page.locator("#lr-suggesting").is_disabled()
        assert "becomes a suggestion under your name" in page.inner_text("#lr-suggest-only")
        _type_at(page, "The quick", " and nimble")
        _type_at(page, "the lazy", "", backspaces=5)  # " lazy" struck through, letter by letter
        return str(page.inner_text("#lr-editor"))

    sam_page = await browser_thread.run(sam_context.new_page)
    shown = str(await browser_thread.run(lambda: suggest(sam_page)))
    assert "sam" in shown  # the author's name is shown, the metadata hidden
    text = await person.wait_text(contains=" nimble++}")
    text = await person.wait_text(contains=" lazy--}")
    marks = re.findall(
        r'\{(\+\+|--)(\{"author":"sam","timestamp":\d+,"id":"([0-9a-f]{16})","user":(\d+)\}@@)([^+\-]*)(?:\+\+|--)\}',
        text,
    )
    assert [(kind, body, int(user)) for kind, _, _, user, body in marks] == [
        ("++", " and nimble", sam_id),
        ("--", " lazy", sam_id),
    ]
    insertion_uid, deletion_uid = marks[0][2], marks[1][2]
    assert insertion_uid != deletion_uid  # two places, two suggestions
    assert text.replace(marks[0][1], "").replace(marks[1][1], "") == NOTE.replace(
        "quick", "quick{++ and nimble++}"
    ).replace(" lazy", "{-- lazy--}")

    # The rows exist like an assistant's: the reviewer sees them, revises one and accepts it.
    def revise_and_accept(page: Page) -> str:
        page.goto(f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/review/")
        page.wait_for_selector(f"#card-{insertion_uid}")
        assert "sam" in page.inner_text(f"#card-{insertion_uid}")
        page.click(f"#revise-{insertion_uid} summary")
        field = page.locator(f"#revision-{insertion_uid}-1")
        assert field.input_value() == " and nimble"
        field.fill(" and agile")
        with page.expect_navigation():
            page.click(f"#card-{insertion_uid} button.accept")
        return page.inner_text("ul.messagelist")

    rita_page = await browser_thread.run(rita_context.new_page)
    for _ in range(20):  # the row follows the burst of typing by a moment
        if _printed(relay, _ROW.format(uid=insertion_uid, marker=_MARKER)) is not None:
            break
        await asyncio.sleep(0.2)
    told = str(await browser_thread.run(lambda: revise_and_accept(rita_page)))
    assert "with your changes: and {--nimble--}{++agile++}" in told
    settled = await person.wait_text(contains="The quick and agile brown fox")
    assert "nimble" not in settled
    status, author, person_id, proposed, revision = _printed(
        relay, _ROW.format(uid=insertion_uid, marker=_MARKER)
    )  # type: ignore[misc]
    assert (status, author, person_id, proposed, revision) == (
        "accepted",
        "sam",
        sam_id,
        [" and nimble"],
        [" and agile"],
    )

    # Undo brings back the person's own proposal for everyone.
    def undo(page: Page) -> None:
        with page.expect_navigation():
            page.click(f"#recent-{insertion_uid} button.undo")

    await browser_thread.run(lambda: undo(rita_page))
    back = await person.wait_text(contains=" and nimble++}")
    assert "agile" not in back

    # The same session on a raw y-websocket client: an edit of plain text is refused, nothing changes.
    cookies = await browser_thread.run(sam_context.cookies)
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in cookies)
    raw = await YClient.spawn(label="sam-raw")
    try:
        await raw.connect(relay.doc_url(doc_id), doc_id, headers={"Cookie": cookie, "Origin": relay.http_url})
        await raw.wait_synced()
        before = await raw.text()
        await raw.insert(0, "Sneaky ")
        event = await raw.wait_event("permission-denied")
        assert "suggesting mode" in event["reason"] and "text itself" in event["reason"]
        await asyncio.sleep(0.3)
        assert await person.text() == before
    finally:
        await raw.close()
    await browser_thread.run(sam_page.close)
    await browser_thread.run(rita_page.close)


async def test_two_suggest_only_people_typing_at_once_converge_and_an_editor_toggles(
    relay: Relay,
    pair_id: str,
    browser_thread: BrowserThread,
    yclients: YClientFactory,
) -> None:
    person = await yclients(
        relay.doc_url(pair_id), pair_id, params={"token": relay.tokens["edit"]}, label="person"
    )
    await person.wait_text(equals=PAIR)
    editor = f"{relay.http_url}/admin/suggestions/suggestion/document/{pair_id}/edit/"
    contexts = [signed_in_context(browser_thread, relay.http_url, name) for name in ("sam", "sue", "ed")]
    try:

        def interleaved() -> list[str]:
            pages = [context.new_page() for context in contexts[:2]]
            for page in pages:
                _open_editor(page, editor)
            _type_at(pages[0], "First line", "")
            _type_at(pages[1], "Second line", "")
            for a, b in zip(" by sam", " by sue", strict=True):  # one keystroke each, turn about
                pages[0].keyboard.type(a)
                pages[1].keyboard.type(b)
            texts: list[str] = []
            for _ in range(100):
                texts = [page.evaluate("() => window.lensEditor.view.state.doc.toString()") for page in pages]
                if texts[0] == texts[1] and " by sam++}" in texts[0] and " by sue++}" in texts[0]:
                    break
                pages[0].wait_for_timeout(50)
            for page in pages:
                page.close()
            return texts

        first, second = await browser_thread.run(interleaved)
        assert first == second
        settled = await person.wait_text(equals=first)
        assert '{"author":"sam"' in settled and '{"author":"sue"' in settled
        assert settled.count("{++") == 2  # one suggestion each, every keystroke inside it

        def toggled() -> tuple[str, str]:
            page = contexts[2].new_page()
            _open_editor(page, editor)
            toggle = page.locator("#lr-suggesting")
            assert not toggle.is_checked() and not toggle.is_disabled()
            toggle.check()
            page.wait_for_timeout(300)  # the socket joins again, in suggesting mode
            for _ in range(100):
                if page.evaluate("() => window.lensEditor.provider.synced"):
                    break
                page.wait_for_timeout(50)
            _type_at(page, "# Pair", " (draft)")
            suggested = str(page.evaluate("() => window.lensEditor.view.state.doc.toString()"))
            toggle.uncheck()
            page.wait_for_timeout(300)
            _type_at(page, "here.", "!")
            live = str(page.evaluate("() => window.lensEditor.view.state.doc.toString()"))
            page.close()
            return suggested, live

        suggested, live = await browser_thread.run(toggled)
        assert '{"author":"ed"' in suggested and " (draft)++}" in suggested
        final = await person.wait_text(contains="here.!")
        assert " (draft)++}" in final and final.count("{++") == 3 and final == live
    finally:
        for context in contexts:
            await browser_thread.run(context.close)
