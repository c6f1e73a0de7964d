"""Revising a proposal in the editor, from outside: an assistant (the official MCP SDK client) suggests; a
reviewer in headless Chromium types inside its insertion, which opens the revision box instead of editing
the note (a person's npm y-websocket client sees no keystroke of it), and accepts with changes in one
decision: everyone sees the revised text, the row keeps both texts, the assistant is told, Undo restores
the proposal. A person without the review permission typing inside another suggestion still makes it
stale."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from .browser import PASSWORD, BrowserThread, call, open_editor, signed_in_context
from .conftest import YClientFactory
from .notify_clients import Heard, sdk_client
from .relay import Relay

pytestmark = pytest.mark.e2e

FOLDER, REVIEWER = "Atelier", "rhea"
NOTE = "# Plan\n\nThe quick brown fox jumps over the lazy dog.\n"
_MARKER = "E2E-REVISE-EDITOR "
_SETUP = """
import json
from django.contrib.auth.models import Group, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={folder!r})
rhea = User.objects.create_user({reviewer!r}, password={password!r}, is_staff=True)
rhea.groups.add(Group.objects.get(name="Reviewers"), Group.objects.get(name="Editors"))
print({marker!r} + json.dumps("ok"))
"""
_ROW = """
import json
from suggestions.models import Suggestion
row = Suggestion.objects.get(uid={uid!r})
reviewer = row.decided_by.username if row.decided_by else None
print({marker!r} + json.dumps([row.status, row.proposed_insertions(), row.revision, reviewer]))
"""


def _printed(relay: Relay, script: str) -> object:
    [line] = [line for line in relay.manage("shell", "-c", script).splitlines() if line.startswith(_MARKER)]
    return json.loads(line[len(_MARKER) :])


@pytest.fixture(scope="module")
def doc_id(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> str:
    desk = tmp_path_factory.mktemp("atelier")
    (desk / "Plan.md").write_text(NOTE, encoding="utf-8")
    script = _SETUP.format(
        desk=str(desk), folder=FOLDER, reviewer=REVIEWER, password=PASSWORD, marker=_MARKER
    )
    assert _printed(relay, script) == "ok"
    return asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))[f"{FOLDER}/Plan.md"]


@pytest.fixture(scope="module")
def reviewer_context(relay: Relay, browser_thread: BrowserThread, doc_id: str) -> Iterator[BrowserContext]:
    context = signed_in_context(browser_thread, relay.http_url, REVIEWER)
    yield context
    browser_thread.call(context.close)


async def test_a_reviewer_types_inside_a_proposal_and_accepts_it_with_changes(
    relay: Relay,
    doc_id: str,
    browser_thread: BrowserThread,
    reviewer_context: BrowserContext,
    yclients: YClientFactory,
) -> None:
    person = await yclients(
        relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="person"
    )
    await person.wait_text(equals=NOTE)
    heard = Heard()
    async with sdk_client(relay.http_url, relay.tokens["suggest"], heard) as assistant:
        path = f"{FOLDER}/Plan.md"
        await call(assistant, "read", {"file_path": path})
        answer = await call(
            assistant, "edit", {"file_path": path, "old_string": "quick brown", "new_string": "slow red"}
        )
        uid = re.search(r"\(suggestion ([0-9a-f]+), pending", answer).group(1)  # type: ignore[union-attr]
        answer = await call(
            assistant, "edit", {"file_path": path, "old_string": "lazy", "new_string": "sleepy"}
        )
        other = re.search(r"\(suggestion ([0-9a-f]+), pending", answer).group(1)  # type: ignore[union-attr]
        proposal = await person.wait_text(contains="sleepy++}")
        page = await browser_thread.run(reviewer_context.new_page)

        def revise(page: Page) -> dict[str, object]:
            open_editor(page, f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/")
            # The pending rows arrive after the text; until they do, a keystroke inside the proposal is an
            # edit of the note (the buttons alone are drawn from the text, so they do not tell).
            expect(page.locator("#lr-pending")).to_have_text("2", timeout=30_000)
            page.evaluate(
                """() => {
                    const view = window.lensEditor.view;
                    const at = view.state.doc.toString().indexOf("slow") + "slow".length;
                    view.focus();
                    view.dispatch({selection: {anchor: at}});
                }"""
            )
            page.keyboard.type("ish", delay=20)
            box = page.locator(f".lr-revise[data-suggestion='{uid}']")
            box.wait_for()
            seen = {
                "draft": page.locator(".lr-revise-text").input_value(),
                "focused": page.evaluate("() => document.activeElement.className"),
                "note": page.evaluate("() => window.lensEditor.view.state.doc.toString()"),
            }
            page.locator(".lr-revise-note").fill("shorter is better")
            page.locator(".lr-revise-text").press("Control+Enter")
            box.wait_for(state="detached")
            return seen

        seen = await browser_thread.run(lambda: revise(page))
        # The keystrokes went into the box, never into the shared note.
        assert seen["draft"] == "slowish red" and seen["focused"] == "lr-revise-text"
        assert "slow red++}" in str(seen["note"]) and "slowi" not in str(seen["note"])
        settled = await person.wait_text(contains="The slowish red fox")
        assert "{--quick brown--}" not in settled and "sleepy++}" in settled
        assert _printed(relay, _ROW.format(uid=uid, marker=_MARKER)) == [
            "accepted",
            ["slow red"],
            ["slowish red"],
            REVIEWER,
        ]
        listed = await call(assistant, "list_suggestions", {"path": path})
        assert f"{uid} ACCEPTED" in listed
        assert "the reviewer changed your text before accepting it: {--slow--}{++slowish++} red" in listed

        # Undo in the editor: the proposal is back as it was, for everyone.
        await browser_thread.run(lambda: page.click("#lr-undo"))
        assert await person.wait_text(equals=proposal) == proposal
        assert _printed(relay, _ROW.format(uid=uid, marker=_MARKER))[:3] == ["pending", ["slow red"], []]  # type: ignore[index]

        # Escape drops a revision: nothing changes.
        def drop(page: Page) -> str:
            page.evaluate(
                """() => {
                    const view = window.lensEditor.view;
                    const at = view.state.doc.toString().indexOf("slow") + 1;
                    view.focus();
                    view.dispatch({selection: {anchor: at}});
                }"""
            )
            page.keyboard.type("x")
            page.locator(".lr-revise").wait_for()
            page.keyboard.press("Escape")
            page.locator(".lr-revise").wait_for(state="detached")
            return str(page.evaluate("() => window.lensEditor.view.state.doc.toString()"))

        assert await browser_thread.run(lambda: drop(page)) == proposal
        assert await person.text() == proposal

        # Anyone else typing inside a proposal edits the note, and the suggestion goes stale.
        at = proposal.index("sleepy") + 2
        await person.insert(at, "Z")
        await person.wait_text(contains="slZeepy")
        for _ in range(50):
            if _printed(relay, _ROW.format(uid=other, marker=_MARKER))[0] == "stale":  # type: ignore[index]
                break
            await asyncio.sleep(0.2)
        assert _printed(relay, _ROW.format(uid=other, marker=_MARKER))[0] == "stale"  # type: ignore[index]
        await browser_thread.run(page.close)
