"""Accepting with changes, from outside: an assistant (the official MCP SDK client) suggests; a reviewer in
headless Chromium changes the inserted text on the review page's card and accepts; a person's npm
y-websocket client sees the reviewer's text; the assistant is told what changed (its decision notification
and `list_suggestions`); Undo on the page brings the assistant's proposal back for everyone."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator

import pytest
from mcp import types
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, call, signed_in_context
from .conftest import YClientFactory
from .notify_clients import Heard, sdk_client
from .relay import Relay

pytestmark = pytest.mark.e2e

FOLDER, REVIEWER = "Desk", "rita"
NOTE = "# Plan\n\nThe quick brown fox jumps over the lazy dog.\n"
_MARKER = "E2E-REVISE "
_SETUP = """
import json
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={folder!r})
rita = User.objects.create_user({reviewer!r}, password={password!r}, is_staff=True)
rita.user_permissions.set(Permission.objects.filter(codename__in=["view_suggestion", "review_suggestion"]))
print({marker!r} + json.dumps("ok"))
"""


@pytest.fixture(scope="module")
def doc_id(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> str:
    desk = tmp_path_factory.mktemp("desk")
    (desk / "Plan.md").write_text(NOTE, encoding="utf-8")
    script = _SETUP.format(
        desk=str(desk), folder=FOLDER, reviewer=REVIEWER, password=PASSWORD, marker=_MARKER
    )
    assert any(line.startswith(_MARKER) for line in relay.manage("shell", "-c", script).splitlines())
    paths = asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))
    return paths[f"{FOLDER}/Plan.md"]


@pytest.fixture(scope="module")
def reviewer_context(relay: Relay, browser_thread: BrowserThread, doc_id: str) -> Iterator[BrowserContext]:
    context = signed_in_context(browser_thread, relay.http_url, REVIEWER)
    yield context
    browser_thread.call(context.close)


@pytest.fixture
async def page(browser_thread: BrowserThread, reviewer_context: BrowserContext) -> AsyncIterator[Page]:
    opened = await browser_thread.run(reviewer_context.new_page)
    yield opened
    await browser_thread.run(opened.close)


async def test_a_reviewer_changes_a_proposal_accepts_it_and_undoes_it(
    relay: Relay, doc_id: str, browser_thread: BrowserThread, page: Page, yclients: YClientFactory
) -> None:
    person = await yclients(
        relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="person"
    )
    await person.wait_text(equals=NOTE)
    heard = Heard()
    async with sdk_client(relay.http_url, relay.tokens["suggest"], heard) as assistant:
        await call(assistant, "read", {"file_path": f"{FOLDER}/Plan.md"})
        answer = await call(
            assistant,
            "edit",
            {"file_path": f"{FOLDER}/Plan.md", "old_string": "quick brown", "new_string": "slow red"},
        )
        found = re.search(r"\(suggestion ([0-9a-f]+), pending", answer)
        assert found, answer
        uid = found.group(1)
        proposal = await person.wait_text(contains="slow red++}")

        def revise_and_accept(page: Page) -> str:
            page.goto(f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/review/")
            page.click(f"#revise-{uid} summary")
            field = page.locator(f"#revision-{uid}-1")
            assert field.input_value() == "slow red"
            field.fill("swift russet")
            with page.expect_navigation():
                page.click(f"#card-{uid} button.accept")
            return page.inner_text("ul.messagelist")

        told = str(await browser_thread.run(lambda: revise_and_accept(page)))
        assert "with your changes: {--slow red--}{++swift russet++}" in told
        settled = await person.wait_text(contains="The swift russet fox")
        assert "{++" not in settled and "slow red" not in settled

        # the assistant is told: its decision notification and list_suggestions carry the difference
        def decided() -> list[dict[str, object]]:
            return [
                n.params.data
                for n in heard.of(types.LoggingMessageNotification)
                if isinstance(n.params.data, dict) and n.params.data.get("suggestion") == uid
            ]

        [data] = await heard.wait(decided, "the decision notification")
        assert data["status"] == "accepted" and data["acceptedWithChanges"] is True
        assert data["changes"] == [
            {
                "proposed": "slow red",
                "accepted": "swift russet",
                "difference": "{--slow red--}{++swift russet++}",
            }
        ]
        listed = await call(assistant, "list_suggestions", {"path": f"{FOLDER}/Plan.md"})
        assert f"{uid} ACCEPTED" in listed
        assert (
            "the reviewer changed your text before accepting it: {--slow red--}{++swift russet++}" in listed
        )

        # undo on the page: the assistant's proposal is back as it was, for everyone
        def undo(page: Page) -> None:
            with page.expect_navigation():
                page.click(f"#recent-{uid} button.undo")

        await browser_thread.run(lambda: undo(page))
        assert await person.wait_text(equals=proposal) == proposal
        listed = await call(assistant, "list_suggestions", {"path": f"{FOLDER}/Plan.md"})
        assert f"{uid} PENDING" in listed and "Accepted with changes" not in listed
