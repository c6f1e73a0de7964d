"""Comment threads, from outside, on one live server: people in headless Chromium (the editor's Comments
panel) and an assistant on the official MCP SDK client discuss a passage. A suggest-only person comments
on a selection, the assistant finds it with `list_threads` and replies, the reply shows in the person's
panel without a reload, the person resolves it; hostile text stays text. A reader sees threads but cannot
write in them, and sees one detached when another client deletes its passage. The assistant that started
a thread is told when a person replies in the browser (the time from the click to the notification is
printed)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, call, signed_in_context, text_result
from .conftest import YClientFactory
from .notify_clients import Heard, sdk_client
from .relay import Relay

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

FOLDER, PERSON, READER = "Desk", "sam", "reed"
NOTES = {
    "Plan.md": "# Plan\n\nThe quick brown fox jumps over the lazy dog.\n",
    "Read.md": "# Read\n\nA reader follows the discussion of this sentence.\n",
    "Talk.md": "# Talk\n\nThe meeting moves to Thursday at noon.\n",
}
HOSTILE = "Why this word? <img src=x onerror=alert(1)>"
# A reply should reach the page within about two seconds (the panel looks at the note's text at most once
# a second); the assistant's notification, one second at most (asserted with room to spare).
SHOWN_WITHIN_MS = 5_000
NOTIFIED_WITHIN_S = 5.0
_MARKER = "E2E-THREADS "
_SETUP = """
import json
from django.contrib.auth.models import Group, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={folder!r})
sam = User.objects.create_user({person!r}, password={password!r}, is_staff=True)
sam.groups.add(Group.objects.get(name="Suggesters"))
reed = User.objects.create_user({reader!r}, password={password!r}, is_staff=True)
reed.groups.add(Group.objects.get(name="Readers"))
print({marker!r} + json.dumps("ok"))
"""


@pytest.fixture(scope="module")
def doc_ids(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    desk = tmp_path_factory.mktemp("desk")
    for name, text in NOTES.items():
        (desk / name).write_text(text, encoding="utf-8")
    script = _SETUP.format(
        desk=str(desk), folder=FOLDER, person=PERSON, reader=READER, password=PASSWORD, marker=_MARKER
    )
    assert any(line.startswith(_MARKER) for line in relay.manage("shell", "-c", script).splitlines())
    paths = asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))
    return {name: paths[f"{FOLDER}/{name}"] for name in NOTES}


@pytest.fixture(scope="module")
def contexts(
    relay: Relay, browser_thread: BrowserThread, doc_ids: dict[str, str]
) -> Iterator[dict[str, BrowserContext]]:
    signed_in = {name: signed_in_context(browser_thread, relay.http_url, name) for name in (PERSON, READER)}
    yield signed_in
    for context in signed_in.values():
        browser_thread.call(context.close)


class TimedHeard(Heard):
    """Heard, with when each notification arrived (time.monotonic, this process's clock)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []

    async def handler(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.notifications.append(message)
            self.arrived.append(time.monotonic())


def _editor_url(relay: Relay, doc_id: str) -> str:
    return f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/"


def _open_editor(page: Page, url: str) -> None:
    page.goto(url)
    # (wait_for_function evaluates a string: the admin's CSP refuses that)
    for _ in range(200):
        if page.evaluate("() => Boolean(window.lensEditor && window.lensEditor.provider.synced)"):
            break
        page.wait_for_timeout(50)
    else:
        raise AssertionError("the editor did not sync")
    page.locator("#lr-comments").wait_for(state="visible")


def _select(page: Page, words: str) -> None:
    page.evaluate(
        """(words) => {
            const view = window.lensEditor.view;
            const from = view.state.doc.toString().indexOf(words);
            view.focus();
            view.dispatch({selection: {anchor: from, head: from + words.length}});
        }""",
        words,
    )


def _thread(page: Page, text: str) -> Any:
    """The panel's thread holding a comment with ``text``."""
    return page.locator("li.lr-thread").filter(has=page.locator(".lr-comment-body", has_text=text))


async def _threads(client: Client, **arguments: Any) -> list[dict[str, Any]]:
    result = await client.call_tool("list_threads", {"path": f"{FOLDER}/Plan.md", **arguments})
    assert result.is_error is False, text_result(result)
    data = result.structured_content
    assert isinstance(data, dict), text_result(result)
    threads: list[dict[str, Any]] = data["threads"]
    return threads


async def test_a_person_comments_an_assistant_replies_and_the_person_resolves(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, contexts: dict[str, BrowserContext]
) -> None:
    page = await browser_thread.run(contexts[PERSON].new_page)

    def comment(page: Page) -> None:
        _open_editor(page, _editor_url(relay, doc_ids["Plan.md"]))
        button = page.locator("#lr-comment-new")
        assert button.is_disabled()  # nothing selected yet
        _select(page, "quick")
        assert button.is_enabled()
        # The shortcut opens the box too; Escape leaves it.
        page.keyboard.press("Control+Alt+m")
        form = page.locator("#lr-comment-form")
        form.wait_for(state="visible")
        assert form.locator(".lr-new-passage").inner_text() == "quick"
        page.keyboard.press("Escape")
        form.wait_for(state="hidden")
        button.click()
        form.locator("textarea").fill(HOSTILE)
        form.locator("button[type=submit]").click()
        _thread(page, HOSTILE).wait_for()
        assert page.inner_text(".lr-comments-status") == "Comment added."
        assert button.is_disabled()  # the selection is a thread's passage now: left
        # In the text: a highlight anchoring the thread, its comment shown as one badge.
        assert page.locator("#lr-editor .lr-anchor").inner_text() == "quick"
        assert page.locator("#lr-editor .lr-thread-badge").inner_text() == "💬 1"

    await browser_thread.run(lambda: comment(page))

    heard = Heard()
    async with sdk_client(relay.http_url, relay.tokens["suggest"], heard) as assistant:
        [thread] = await _threads(assistant)
        assert thread["status"] == "open" and thread["passage"] == "quick"
        assert [(c["author"], c["text"]) for c in thread["comments"]] == [(PERSON, HOSTILE)]
        listing = await call(assistant, "list_threads", {"path": f"{FOLDER}/Plan.md"})
        assert HOSTILE in listing

        answer = "It is shorter than swift."
        started = time.monotonic()
        await call(assistant, "reply", {"thread": thread["id"], "text": answer})

        def reply_shown(page: Page) -> float:
            _thread(page, HOSTILE).locator(".lr-comment-body", has_text=answer).wait_for(
                timeout=SHOWN_WITHIN_MS
            )
            return time.monotonic()

        shown = await browser_thread.run(lambda: reply_shown(page))
        took = (shown - started) * 1000
        print(f"\nthe MCP reply shown in the person's panel, without a reload, {took:.0f} ms after the call")

        def check_and_resolve(page: Page) -> tuple[str, int, int]:
            item = _thread(page, HOSTILE)
            bodies = item.locator(".lr-comment-body").all_inner_texts()
            assert bodies == [HOSTILE, answer]
            assert item.locator(".lr-comment-author").all_inner_texts()[0] == PERSON
            assert item.locator(".lr-thread-head").inner_text().strip() == "“quick”"
            images = (page.locator("#lr-comments img").count(), page.locator("img[src=x]").count())
            assert page.locator("#lr-editor .lr-thread-badge").inner_text() == "💬 2"
            item.locator("button.lr-resolve").click()
            resolved = page.locator("#lr-threads-resolved li.lr-thread")
            resolved.wait_for()
            tag = resolved.locator(".lr-tag-resolved").inner_text()
            assert resolved.locator(".lr-thread-body").is_hidden()  # folded
            return tag, *images

        tag, panel_images, any_images = await browser_thread.run(lambda: check_and_resolve(page))
        assert tag == f"resolved by {PERSON}"
        assert (panel_images, any_images) == (0, 0)  # shown as text: no element made from it

        assert await _threads(assistant, status="open") == []
        [closed] = await _threads(assistant, status="resolved")
        assert closed["id"] == thread["id"] and closed["resolved_by"] == PERSON

        # Reopen from the panel: open again for everyone.
        def reopen(page: Page) -> None:
            page.locator("#lr-threads-resolved .lr-thread-expand").click()
            page.locator("#lr-threads-resolved button.lr-reopen").click()
            page.locator("#lr-threads-open li.lr-thread").wait_for()

        await browser_thread.run(lambda: reopen(page))
        assert [t["id"] for t in await _threads(assistant, status="open")] == [thread["id"]]
        # Resolving and reopening write no comment: the assistant, who took part, was told of none.
        told = heard.of(types.LoggingMessageNotification)
        assert not [n for n in told if n.params.logger == "lens-relay.comments"]
    await browser_thread.run(page.close)


async def test_a_reader_sees_threads_but_cannot_write_in_them(
    relay: Relay,
    doc_ids: dict[str, str],
    browser_thread: BrowserThread,
    contexts: dict[str, BrowserContext],
    yclients: YClientFactory,
) -> None:
    async with sdk_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        await call(assistant, "read", {"file_path": f"{FOLDER}/Read.md"})
        started = await call(
            assistant,
            "comment",
            {"file_path": f"{FOLDER}/Read.md", "passage": "this sentence", "text": "Too long?"},
        )
    thread_id = started.split()[2]
    page = await browser_thread.run(contexts[READER].new_page)

    def linked(page: Page) -> tuple[str, str]:
        """The inbox's link to a thread opens the note at its passage, the thread marked in the panel."""
        _open_editor(page, _editor_url(relay, doc_ids["Read.md"]) + f"#thread-{thread_id}")
        current = page.locator(".lr-thread-current")
        current.wait_for()
        for _ in range(50):
            head = page.evaluate(
                "() => { const s = window.lensEditor.view.state; "
                "return s.doc.toString().slice(s.selection.main.head); }"
            )
            if head.startswith("this sentence"):
                break
            page.wait_for_timeout(50)
        return current.locator(".lr-comment-body").first.inner_text(), head

    body, head = await browser_thread.run(lambda: linked(page))
    assert body == "Too long?" and head.startswith("this sentence==}")

    def at_line(page: Page) -> str:
        """MCP get_url's link at a line opens the note there."""
        _open_editor(page, _editor_url(relay, doc_ids["Read.md"]) + "#L3")
        for _ in range(50):
            line = page.evaluate(
                "() => { const s = window.lensEditor.view.state; "
                "return s.doc.lineAt(s.selection.main.head).number; }"
            )
            if line == 3:
                break
            page.wait_for_timeout(50)
        return str(line)

    assert await browser_thread.run(lambda: at_line(page)) == "3"

    def look(page: Page) -> dict[str, Any]:
        _open_editor(page, _editor_url(relay, doc_ids["Read.md"]))
        item = _thread(page, "Too long?")
        item.wait_for()
        _select(page, "reader")
        page.keyboard.press("Control+Alt+m")
        page.wait_for_timeout(200)
        passage = item.locator(".lr-thread-passage")
        passage.click()  # to the passage in the note
        cursor = page.evaluate(
            """() => {
                const state = window.lensEditor.view.state;
                return state.doc.toString().slice(state.selection.main.head);
            }"""
        )
        return {
            "head": item.locator(".lr-thread-head").inner_text().strip(),
            "nulls": page.inner_text("#lr-comments").count("null"),
            "passage": passage.inner_text(),
            "comment buttons": page.locator("#lr-comment-new").count(),
            "comment forms": page.locator("#lr-comment-form").count(),
            "reply boxes": page.locator("form.lr-reply").count(),
            "resolve buttons": page.locator("button.lr-resolve, button.lr-reopen").count(),
            "cursor at": cursor,
        }

    seen = await browser_thread.run(lambda: look(page))
    assert seen.pop("cursor at").startswith("this sentence==}")
    assert seen == {
        "head": "“this sentence”",
        "nulls": 0,
        "passage": "“this sentence”",
        "comment buttons": 0,
        "comment forms": 0,
        "reply boxes": 0,
        "resolve buttons": 0,
    }

    # A person on another Yjs client deletes the passage with its highlight: the thread stays listed,
    # detached, with its comment, and the reader sees so without a reload.
    doc_id = doc_ids["Read.md"]
    writer = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]})
    text = await writer.wait_text(contains="this sentence==}")
    start = text.index("{==")
    await writer.delete(start, text.index("==}", start) + 3 - start)

    def detached(page: Page) -> tuple[str, str, list[str]]:
        item = _thread(page, "Too long?")
        tag = item.locator(".lr-tag-detached")
        tag.wait_for()
        bodies = item.locator(".lr-comment-body").all_inner_texts()
        return tag.inner_text(), item.locator(".lr-thread-passage").inner_text(), bodies

    tag, passage, bodies = await browser_thread.run(lambda: detached(page))
    await browser_thread.run(page.close)
    assert tag == "detached: its passage was deleted"
    assert (passage, bodies) == ("“this sentence”", ["Too long?"])


async def test_the_assistant_that_started_a_thread_is_told_of_a_persons_reply(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, contexts: dict[str, BrowserContext]
) -> None:
    heard = TimedHeard()
    async with sdk_client(relay.http_url, relay.tokens["suggest"], heard) as assistant:
        await call(assistant, "read", {"file_path": f"{FOLDER}/Talk.md"})
        started = await call(
            assistant,
            "comment",
            {"file_path": f"{FOLDER}/Talk.md", "passage": "Thursday", "text": "Is Thursday confirmed?"},
        )
        assert "Started thread" in started
        page = await browser_thread.run(contexts[PERSON].new_page)
        reply = "Yes: Thursday, room 4."

        def answer(page: Page) -> float:
            _open_editor(page, _editor_url(relay, doc_ids["Talk.md"]))
            item = _thread(page, "Is Thursday confirmed?")
            item.wait_for()
            item.locator("form.lr-reply textarea").fill(reply)
            clicked = time.monotonic()
            item.locator("form.lr-reply button[type=submit]").click()
            item.locator(".lr-comment-body", has_text=reply).wait_for()
            assert item.locator("form.lr-reply textarea").input_value() == ""
            return clicked

        clicked = await browser_thread.run(lambda: answer(page))

        def told() -> list[int]:
            return [
                i
                for i, n in enumerate(heard.notifications)
                if isinstance(n, types.LoggingMessageNotification)
                and n.params.logger == "lens-relay.comments"
                and isinstance(n.params.data, dict)
                and n.params.data.get("text") == reply
            ]

        [index] = await heard.wait(told, "the comment notification", seconds=10.0)
        latency = heard.arrived[index] - clicked
        print(f"\nreply click -> notifications/message (lens-relay.comments): {latency * 1000:.0f} ms")
        data = heard.notifications[index].params.data
        assert heard.notifications[index].params.level == "notice"
        assert data["type"] == "comment_posted" and data["author"] == PERSON
        assert data["path"] == f"{FOLDER}/Talk.md" and data["passage"] == "Thursday"
        assert latency < NOTIFIED_WITHIN_S, json.dumps(data)
        await browser_thread.run(page.close)
