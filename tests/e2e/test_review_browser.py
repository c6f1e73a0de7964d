"""Review end to end with real clients: an assistant suggests over MCP (the official `mcp` client), a person
watches the document in an npm y-websocket client, and an editor decides in the admin in headless Chromium.

One server and one browser serve the whole module. Playwright's sync API runs on a thread of its own (its
objects belong to the thread that made them), so the async tests keep their event loop for the Node
clients and the MCP client while the browser works.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import pytest
from mcp import Client
from playwright.sync_api import BrowserContext, Page

from .browser import (
    PASSWORD,
    AdminPage,
    BrowserThread,
    call,
    mcp_client,
    signed_in_context,
)
from .conftest import YClientFactory
from .relay import Relay
from .yclient import YClient, utf16_index, utf16_len

pytestmark = pytest.mark.e2e


FOLDER = "Review"
PANGRAM = "# {title}\n\nThe quick brown fox jumps over the lazy dog.\nAnother line.\n"
DOCUMENTS = ("Accept", "Reject", "Bulk-one", "Bulk-two", "Partly", "Wholly", "Viewer")
EDITOR, INTERN = "editor", "intern"
ASSISTANT = "claude"
# A token session's suggestions are authored as the token and the client (the SDK calls itself "mcp").
AUTHOR = f"{ASSISTANT} · mcp"
_MARKER = "E2E-REVIEW "

_SETUP_SCRIPT = """
import json
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from lensrelay.access.tokens import token_create
call_command("import_vault", {vault!r}, folder={folder!r})
_, raw = token_create(name={assistant!r}, role="suggest")
apps = ["suggestions", "lensrelay"]
perms = {{p.codename: p for p in Permission.objects.filter(content_type__app_label__in=apps)}}
for username, codenames in {users!r}.items():
    user = User.objects.create_user(username, password={password!r}, is_staff=True)
    user.user_permissions.set([perms[c] for c in codenames])
print({marker!r} + json.dumps(raw))
"""


def text_of(title: str) -> str:
    return PANGRAM.format(title=title)


# -- module set-up ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Review:
    relay: Relay
    assistant_token: str
    writer_token: str
    doc_ids: dict[str, str]
    browser: BrowserThread

    def doc_url(self, name: str) -> str:
        return self.relay.doc_url(self.doc_ids[name])


@pytest.fixture(scope="module")
def review(relay: Relay, browser_thread: BrowserThread, tmp_path_factory: pytest.TempPathFactory) -> Review:
    vault = tmp_path_factory.mktemp("review-vault")
    for title in DOCUMENTS:
        (vault / f"{title}.md").write_text(text_of(title), encoding="utf-8")
    users = {EDITOR: ["view_suggestion", "review_suggestion", "view_document"], INTERN: ["view_suggestion"]}
    script = _SETUP_SCRIPT.format(
        vault=str(vault),
        folder=FOLDER,
        assistant=ASSISTANT,
        users=users,
        password=PASSWORD,
        marker=_MARKER,
    )
    out = relay.manage("shell", "-c", script)
    assistant_token = json.loads(
        next(line for line in out.splitlines() if line.startswith(_MARKER))[len(_MARKER) :]
    )
    writer = relay.tokens["edit"]
    paths = asyncio.run(relay.document_paths(writer, folder=FOLDER))
    doc_ids = {title: paths[f"{FOLDER}/{title}.md"] for title in DOCUMENTS}
    return Review(relay, assistant_token, writer, doc_ids, browser_thread)


@pytest.fixture(scope="module")
def editor_context(review: Review) -> Iterator[BrowserContext]:
    context = signed_in_context(review.browser, review.relay.http_url, EDITOR)
    yield context
    review.browser.call(context.close)


@pytest.fixture(scope="module")
def intern_context(review: Review) -> Iterator[BrowserContext]:
    context = signed_in_context(review.browser, review.relay.http_url, INTERN)
    yield context
    review.browser.call(context.close)


@pytest.fixture
async def editor(review: Review, editor_context: BrowserContext) -> AsyncIterator[AdminPage]:
    admin = await AdminPage.open(review.browser, review.relay.http_url, editor_context)
    yield admin
    await admin.close()


@pytest.fixture
async def intern(review: Review, intern_context: BrowserContext) -> AsyncIterator[AdminPage]:
    admin = await AdminPage.open(review.browser, review.relay.http_url, intern_context)
    yield admin
    await admin.close()


# -- the assistant and the watcher ---------------------------------------------------------------------


def assistant(review: Review) -> AbstractAsyncContextManager[Client]:
    return mcp_client(review.relay.http_url, review.assistant_token)


async def suggest(client: Client, title: str, old: str, new: str) -> str:
    """Read, then edit; returns the suggestion's id from the tool's answer."""
    path = f"{FOLDER}/{title}.md"
    await call(client, "read", {"file_path": path})
    answer = await call(client, "edit", {"file_path": path, "old_string": old, "new_string": new})
    match = re.search(r"\(suggestion ([0-9a-f]+), pending", answer)
    assert match, answer
    return match.group(1)


async def watcher(review: Review, yclients: YClientFactory, title: str) -> YClient:
    doc_id = review.doc_ids[title]
    client = await yclients(review.doc_url(title), doc_id, params={"token": review.writer_token}, label=title)
    assert await client.text() == text_of(title)
    return client


async def markup_seen(client: YClient, *pieces: str) -> str:
    text = await client.wait_text(contains="{++")
    for piece in pieces:
        assert piece in text, text
    return text


# -- the tests ------------------------------------------------------------------------------------------


async def test_accept_in_the_browser_settles_the_document_for_a_connected_client(
    review: Review, yclients: YClientFactory, editor: AdminPage
) -> None:
    person = await watcher(review, yclients, "Accept")
    async with assistant(review) as client:
        uid = await suggest(client, "Accept", "quick brown", "slow red")
        seen = await markup_seen(person, "{--", "quick brown--}", "slow red++}")
        assert f'"id":"{uid}"' in seen and f'"author":"{AUTHOR}"' in seen

        await editor.open_suggestion(uid)
        assert await editor.field("status") == "Pending"
        assert await editor.do(lambda page: page.inner_text(".hunk del")) == "quick brown"
        assert await editor.do(lambda page: page.inner_text(".hunk ins")) == "slow red"
        assert await editor.do(lambda page: page.locator("div.word-diff").count()) == 1

        await editor.decide("accept")
        assert await editor.messages("success") == [f"Accepted the edit of {FOLDER}/Accept.md ({uid})."]
        expected = text_of("Accept").replace("quick brown", "slow red")
        assert await person.wait_text(equals=expected) == expected
        await editor.open_suggestion(uid)  # the editor landed on what is pending next; look back
        assert await editor.field("status") == "Accepted"
        assert await editor.field("decided_by") == EDITOR
        assert await editor.do(lambda page: page.locator("#suggestion-accept").count()) == 0

        told = await call(client, "list_suggestions", {"path": f"{FOLDER}/Accept.md"})
        assert f"{uid} ACCEPTED edit {FOLDER}/Accept.md" in told and f"decided by {EDITOR}" in told


async def test_reject_with_a_note_restores_the_text_and_the_assistant_reads_the_note(
    review: Review, yclients: YClientFactory, editor: AdminPage
) -> None:
    person = await watcher(review, yclients, "Reject")
    note = "Keep the classic pangram: it tests every letter."
    async with assistant(review) as client:
        uid = await suggest(client, "Reject", "lazy dog", "sleepy cat")
        await markup_seen(person, "lazy dog--}", "sleepy cat++}")

        await editor.open_suggestion(uid)
        await editor.decide("reject", note)
        assert await editor.messages("success") == [f"Rejected the edit of {FOLDER}/Reject.md ({uid})."]
        assert await person.wait_text(equals=text_of("Reject")) == text_of("Reject")
        await editor.open_suggestion(uid)
        assert await editor.field("status") == "Rejected"
        assert await editor.field("decided_by") == EDITOR
        assert await editor.field("note") == note

        told = await call(client, "list_suggestions", {"status": "rejected"})
        assert f"{uid} REJECTED edit {FOLDER}/Reject.md" in told
        assert f"Reviewer's note: {note}" in told


async def test_bulk_accept_through_the_confirmation_page(
    review: Review, yclients: YClientFactory, editor: AdminPage
) -> None:
    one = await watcher(review, yclients, "Bulk-one")
    two = await watcher(review, yclients, "Bulk-two")
    async with assistant(review) as client:
        uid_one = await suggest(client, "Bulk-one", "Another line.", "One more line.")
        uid_two = await suggest(client, "Bulk-two", "brown fox", "grey wolf")
    await markup_seen(one, "One more")
    await markup_seen(two, "grey wolf")

    def select_and_confirm(page: Page) -> str:
        page.goto(f"{review.relay.http_url}/admin/suggestions/suggestion/?q=Bulk")  # opens on pending
        assert page.locator("#result_list tbody tr").count() == 2
        page.check("#action-toggle")
        page.select_option("select[name=action]", "accept_selected")
        with page.expect_navigation():
            page.click("button[name=index]")
        return page.inner_text("#decide-selected")

    confirmation = await editor.do(select_and_confirm)
    assert "Another → One more" in confirmation
    assert "brown fox → grey wolf" in confirmation
    # nothing has changed yet: the clients still see the markup
    assert "{++" in await one.text() and "{++" in await two.text()

    def confirm(page: Page) -> None:
        page.fill("#id_decision_note", "Both fine.")
        with page.expect_navigation():
            page.click("#confirm-decision")

    await editor.do(confirm)
    assert await editor.messages("success") == ["2 accepted"]  # one summary, not a banner per row
    for uid in (uid_one, uid_two):
        await editor.open_suggestion(uid)
        assert await editor.field("status") == "Accepted"
    assert await editor.messages("error") == []
    expected_one = text_of("Bulk-one").replace("Another line.", "One more line.")
    expected_two = text_of("Bulk-two").replace("brown fox", "grey wolf")
    assert await one.wait_text(equals=expected_one) == expected_one
    assert await two.wait_text(equals=expected_two) == expected_two

    listed = await editor.do(
        lambda page: (
            page.goto(f"{review.relay.http_url}/admin/suggestions/suggestion/?q=Bulk&status=all"),
            page.locator("#result_list tbody tr").all_inner_texts(),
        )[1]
    )
    assert len(listed) == 2 and all("accepted" in row.lower() and EDITOR in row for row in listed)


async def test_a_suggestion_partly_edited_away_is_refused_with_its_reason_and_becomes_stale(
    review: Review, yclients: YClientFactory, editor: AdminPage
) -> None:
    person = await watcher(review, yclients, "Partly")
    async with assistant(review) as client:
        uid = await suggest(
            client, "Partly", "quick brown fox jumps over the lazy", "slow brown fox jumps over the sleepy"
        )
    text = await markup_seen(person, "slow++}", "sleepy++}")

    await editor.open_suggestion(uid)
    assert await editor.do(lambda page: page.locator(".hunk del").all_inner_texts()) == ["quick", "lazy"]

    # the person deletes the first hunk (its markup and both words) while the editor has the page open
    start = text.index("{--")
    end = text.index("++}", start) + len("++}")
    await person.delete(utf16_index(text, start), utf16_len(text[start:end]))
    remaining = text[:start] + text[end:]
    await person.wait_text(equals=remaining)
    # The server's row follower marks it stale within a second (part of its markup is gone); a decision
    # made before that is refused for the same reason.
    await editor.decide("accept")
    [error] = await editor.messages("error")
    assert error.startswith(f"Could not accept the edit of {FOLDER}/Partly.md ({uid}): ")
    assert error.endswith(
        ("part of the suggestion's markup was edited away.", "suggestion is already stale.")
    )
    await editor.open_suggestion(uid)
    assert await editor.field("status") == "Stale"
    assert await person.text() == remaining  # nothing was applied


async def test_a_suggestion_wholly_edited_away_is_refused_and_stale(
    review: Review, yclients: YClientFactory, editor: AdminPage
) -> None:
    person = await watcher(review, yclients, "Wholly")
    async with assistant(review) as client:
        uid = await suggest(client, "Wholly", "Another line.", "A replaced line.")
        text = await markup_seen(person, "A replaced++} line.")

        await editor.open_suggestion(uid)
        assert await editor.do(lambda page: page.locator("#suggestion-accept").count()) == 1

        start = text.index("{--")
        end = text.index("++}", start) + len("++}")
        await person.delete(utf16_index(text, start), utf16_len(text[start:end]))
        await person.wait_text(equals=text[:start] + text[end:])
        # the server notices the markup is gone and marks the row stale on its own
        for _ in range(50):
            if f"{uid} STALE" in await call(client, "list_suggestions", {"path": f"{FOLDER}/Wholly.md"}):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the row did not become stale")

    # the page was opened while it was pending: clicking Accept now is refused with the reason
    await editor.decide("accept")
    [error] = await editor.messages("error")
    assert error.startswith(f"Could not accept the edit of {FOLDER}/Wholly.md ({uid}): ")
    assert error.endswith(("suggestion is already stale.", "suggestion no longer found in document."))
    await editor.open_suggestion(uid)
    assert await editor.field("status") == "Stale"
    assert await editor.do(lambda page: page.locator("#suggestion-accept").count()) == 0


async def test_staff_without_the_review_permission_sees_no_buttons(
    review: Review, yclients: YClientFactory, intern: AdminPage
) -> None:
    person = await watcher(review, yclients, "Viewer")
    async with assistant(review) as client:
        uid = await suggest(client, "Viewer", "lazy dog", "drowsy dog")
    await markup_seen(person, "drowsy++}")

    await intern.open_suggestion(uid)
    assert await intern.do(lambda page: page.inner_text(".hunk ins")) == "drowsy"
    buttons = await intern.do(lambda page: page.locator("#suggestion-accept, #suggestion-reject").count())
    assert buttons == 0
    reason = await intern.do(lambda page: page.inner_text("#suggestion-no-review"))
    assert "Can review (accept or reject) suggestions" in reason

    def changelist(page: Page) -> tuple[int, int]:
        page.goto(f"{review.relay.http_url}/admin/suggestions/suggestion/")
        rows = page.locator("#result_list tbody tr").count()
        actions = page.locator("option[value=accept_selected], option[value=reject_selected]").count()
        return rows, actions

    rows, actions = await intern.do(changelist)
    assert rows >= 1 and actions == 0
    told = await intern.do(lambda page: page.inner_text("#changelist-no-review"))
    assert "Can review (accept or reject) suggestions" in told
    assert "{++" in await person.text()  # still pending
