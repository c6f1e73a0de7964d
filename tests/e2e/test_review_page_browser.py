"""The document review page as an editor uses it, in headless Chromium, against a live server.

Staff create a folder-scoped token in the admin and an assistant uses it over MCP (the official SDK
client); a person watches the note in an npm y-websocket client (and sees the assistant's presence);
the editor reviews the note on its review page: accept one, reject one with a note, see a new suggestion
and a person's edit arrive without a reload, accept the rest with "Accept all", move on to the next
document. A reviewer without the permission is told why. Hostile note and suggestion text stays inert in
the browser. Screenshots of the token page, the review page and the admin index go to
``$LENSRELAY_SCREENSHOTS`` (default ``/tmp/lensrelay-screenshots``).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, call, mcp_client, signed_in_context, text_result
from .conftest import YClientFactory
from .relay import Relay
from .yclient import YClient

pytestmark = pytest.mark.e2e

DESK, ELSEWHERE = "Desk", "Elsewhere"
ASSISTANT = "claude-desk"
EDITOR, INTERN = "editor", "intern"
SCREENSHOTS = Path(os.environ.get("LENSRELAY_SCREENSHOTS", "/tmp/lensrelay-screenshots"))
VIEWPORT = {"width": 1400, "height": 900}
_MARKER = "E2E-REVIEW-PAGE "

THREE = (
    "# Three\n\nThe quick brown fox jumps over the lazy dog.\nBirds sing in the morning.\n\n"
    "Rivers run to the sea. See [[Second]] and [[Nowhere]].\n"
)
SECOND = "# Second\n\nA second note waits for review.\n"
PAYLOADS = (
    "<script>window.__xss = 1</script>",
    '<img src=x onerror="window.__xss = 2">',
    '<svg onload="window.__xss = 3"></svg>',
    "[click me](javascript:window.__xss=4)",
    '<a href="javascript:window.__xss=5">link</a>',
    '<iframe srcdoc="<script>parent.__xss = 6</script>"></iframe>',
    '[[x" onmouseover="window.__xss=7]]',
    '<details open ontoggle="window.__xss = 8">d</details>',
)
HOSTILE = "# Hostile\n\n" + "\n\n".join(PAYLOADS) + "\n\nPlain words to change.\n"
DANGEROUS = (
    "#review-live script, #review-live img, #review-live iframe, #review-live svg, "
    "#review-live details:not(.revise), "
    "#review-live [onerror], #review-live [onload], #review-live [onmouseover], #review-live [ontoggle], "
    "#review-live a[href^='javascript'], #review-live [style]"
)

_SETUP_SCRIPT = """
import json
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={desk_name!r})
call_command("import_vault", {elsewhere!r}, folder={elsewhere_name!r})
User.objects.create_superuser({editor!r}, "editor@example.org", {password!r})
intern = User.objects.create_user({intern!r}, password={password!r}, is_staff=True)
intern.user_permissions.set(Permission.objects.filter(codename="view_suggestion"))
print({marker!r} + json.dumps("ok"))
"""


@dataclass(frozen=True)
class Site:
    relay: Relay
    doc_ids: dict[str, str]
    browser: BrowserThread

    @property
    def url(self) -> str:
        return self.relay.http_url

    def review_url(self, name: str) -> str:
        return f"/admin/suggestions/suggestion/document/{self.doc_ids[name]}/review/"


@pytest.fixture(scope="module")
def site(relay: Relay, browser_thread: BrowserThread, tmp_path_factory: pytest.TempPathFactory) -> Site:
    desk, elsewhere = tmp_path_factory.mktemp("desk"), tmp_path_factory.mktemp("elsewhere")
    (desk / "Three.md").write_text(THREE, encoding="utf-8")
    (desk / "Second.md").write_text(SECOND, encoding="utf-8")
    (desk / "Hostile.md").write_text(HOSTILE, encoding="utf-8")
    (elsewhere / "Secret.md").write_text("Not for the desk assistant.\n", encoding="utf-8")
    script = _SETUP_SCRIPT.format(
        desk=str(desk),
        desk_name=DESK,
        elsewhere=str(elsewhere),
        elsewhere_name=ELSEWHERE,
        editor=EDITOR,
        intern=INTERN,
        password=PASSWORD,
        marker=_MARKER,
    )
    assert any(line.startswith(_MARKER) for line in relay.manage("shell", "-c", script).splitlines())
    paths = asyncio.run(relay.document_paths(relay.tokens["edit"], folder=DESK))
    doc_ids = {name: paths[f"{DESK}/{name}.md"] for name in ("Three", "Second", "Hostile")}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return Site(relay, doc_ids, browser_thread)


@pytest.fixture(scope="module")
def editor_context(site: Site) -> Iterator[BrowserContext]:
    context = signed_in_context(site.browser, site.url, EDITOR)
    yield context
    site.browser.call(context.close)


@pytest.fixture(scope="module")
def intern_context(site: Site) -> Iterator[BrowserContext]:
    context = signed_in_context(site.browser, site.url, INTERN)
    yield context
    site.browser.call(context.close)


class Tab:
    """One browser page; every method runs on the browser thread."""

    def __init__(self, site: Site, page: Page) -> None:
        self.site = site
        self.page = page

    async def do(self, fn: object) -> object:
        return await self.site.browser.run(lambda: fn(self.page))  # type: ignore[operator]

    async def goto(self, path: str) -> None:
        await self.do(lambda page: page.goto(f"{self.site.url}{path}"))

    async def shot(self, name: str) -> Path:
        target = SCREENSHOTS / f"{name}.png"
        await self.do(lambda page: page.screenshot(path=str(target), full_page=True))
        return target


@pytest.fixture
async def editor(site: Site, editor_context: BrowserContext) -> AsyncIterator[Tab]:
    page = await site.browser.run(editor_context.new_page)
    await site.browser.run(lambda: page.set_viewport_size(VIEWPORT))
    yield Tab(site, page)
    await site.browser.run(page.close)


@pytest.fixture
async def intern(site: Site, intern_context: BrowserContext) -> AsyncIterator[Tab]:
    page = await site.browser.run(intern_context.new_page)
    await site.browser.run(lambda: page.set_viewport_size(VIEWPORT))
    yield Tab(site, page)
    await site.browser.run(page.close)


async def suggest(client: Client, path: str, old: str, new: str, comment: str | None = None) -> str:
    await call(client, "read", {"file_path": path})
    arguments = {"file_path": path, "old_string": old, "new_string": new}
    if comment:
        arguments["comment"] = comment
    answer = await call(client, "edit", arguments)
    match = re.search(r"\(suggestion ([0-9a-f]+), pending[;)]", answer)
    assert match, answer
    return match.group(1)


async def wait_for(probe: object, *, timeout: float = 10.0, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()  # type: ignore[operator]
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        await asyncio.sleep(0.1)


async def assistant_presence(person: YClient) -> dict[str, object] | None:
    for state in (await person.awareness_states()).values():
        # An API-token session is shown as "token · client" (the client's name from initialize).
        name = str((state.get("user") or {}).get("name", "")) if isinstance(state, dict) else ""
        if isinstance(state, dict) and name.startswith(f"{ASSISTANT} · "):
            return state
    return None


# -- staff create the assistant's token ---------------------------------------------------------------


def create_token_in_admin(page: Page, base_url: str) -> tuple[str, str]:
    page.goto(f"{base_url}/admin/lensrelay/apitoken/add/")
    assert "Folders (none selected: all folders)" in page.inner_text("#apitoken_form")
    page.fill("#id_name", ASSISTANT)
    page.select_option("#id_role", "suggest")
    page.select_option("#id_folders_from", label=DESK)
    page.click("#id_folders_add")
    with page.expect_navigation():
        page.click("input[name=_save]")
    page.wait_for_selector("#token-created")
    assert page.inner_text("#token-scope") == DESK
    page.screenshot(path=str(SCREENSHOTS / "token-created.png"), full_page=True)
    return page.input_value("#raw-token"), page.input_value("#mcp-command")


# -- the tests -------------------------------------------------------------------------------------------


async def test_an_editor_reviews_a_note_from_token_to_next_document(
    site: Site, yclients: YClientFactory, editor: Tab, intern: Tab
) -> None:
    raw, command = await editor.do(lambda page: create_token_in_admin(page, site.url))  # type: ignore[misc]
    assert command == (
        f'claude mcp add --transport http lens {site.url}/mcp --header "Authorization: Bearer {raw}"'
    )
    three, second = f"{DESK}/Three.md", f"{DESK}/Second.md"
    person = await yclients(
        site.relay.doc_url(site.doc_ids["Three"]),
        site.doc_ids["Three"],
        params={"token": site.relay.tokens["edit"]},
        label="person",
    )
    assert await person.text() == THREE

    async with mcp_client(site.url, raw) as assistant:
        # the token reaches its folder only
        info = await call(assistant, "info", {})
        assert DESK in info and ELSEWHERE not in info
        hidden = await assistant.call_tool("read", {"file_path": f"{ELSEWHERE}/Secret.md"})
        assert hidden.is_error and "Secret" not in text_result(hidden).replace(f"{ELSEWHERE}/Secret.md", "")

        first = await suggest(assistant, three, "quick brown", "slow red", comment="More vivid.")
        # the person sees the assistant at work: a named presence with a cursor, gone a few seconds later
        state = await wait_for(lambda: assistant_presence(person), what="assistant presence")
        assert isinstance(state, dict) and state["assistant"] is True
        # the cursor is a Yjs relative position that the JS client resolves to the change
        cursor = await person.resolve_position(state["cursor"]["anchor"])  # type: ignore[index]
        text_now = await person.text()
        assert cursor is not None and text_now.encode("utf-16-le")[2 * cursor :].decode(
            "utf-16-le"
        ).startswith("{--"), (cursor, text_now)
        second_uid = await suggest(assistant, three, "lazy dog", "sleepy cat")
        third = await suggest(assistant, three, "morning", "evening")
        await suggest(assistant, second, "waits for", "awaits")
        await person.wait_text(contains="evening++}")

        # the index shows what waits, per folder
        await editor.goto("/admin/")
        overview = await editor.do(lambda page: page.inner_text("#pending-overview"))
        assert DESK in str(overview) and "4" in str(overview)
        await editor.shot("admin-index")

        # the review page shows the note rendered, each suggestion in place
        await editor.goto(site.review_url("Three"))
        await editor.do(lambda page: page.wait_for_selector("#note-marked"))
        inserted = await editor.do(lambda page: page.locator("#note-marked ins.sg").all_inner_texts())
        deleted = await editor.do(lambda page: page.locator("#note-marked del.sg").all_inner_texts())
        assert inserted == ["slow red", "sleepy cat", "evening"] and deleted == [
            "quick brown",
            "lazy dog",
            "morning",
        ]
        assert await editor.do(lambda page: page.inner_text("#note-marked h1")) == "Three"
        assert await editor.do(lambda page: page.locator("#note-marked a.wikilink").all_inner_texts()) == [
            "Second"
        ]
        card = await editor.do(lambda page: page.inner_text(f"#card-{first}"))
        assert ASSISTANT in str(card) and "just now" in str(card) and "More vivid." in str(card)
        assert await editor.do(lambda page: page.locator(".card").count()) == 3
        await editor.shot("review-page")

        # one suggestion's own page: whole words marked, the other suggestions shown as marks
        def change_page(page: Page) -> str:
            page.goto(f"{site.url}/admin/suggestions/suggestion/?q={third}")
            with page.expect_navigation():
                page.click("#result_list th.field-path a")
            page.screenshot(path=str(SCREENSHOTS / "suggestion-change.png"), full_page=True)
            return page.inner_text("#suggestion-review")

        change = str(await editor.do(change_page))
        assert "{--" not in change and "@@" not in change
        struck = await editor.do(lambda page: page.locator(".word-diff .flow > del").all_inner_texts())
        assert struck == ["morning"]
        await editor.goto(site.review_url("Three"))

        # the toggle shows the note as if all were accepted, or without the suggestions
        await editor.do(lambda page: page.check("input[name=view][value=accepted]"))
        accepted = await editor.do(lambda page: page.inner_text("#note-accepted"))
        assert "The slow red fox jumps over the sleepy cat." in str(accepted)
        assert await editor.do(lambda page: page.is_hidden("#note-marked"))
        await editor.do(lambda page: page.check("input[name=view][value=rejected]"))
        assert "quick brown fox jumps over the lazy dog" in str(
            await editor.do(lambda p: p.inner_text("#note-rejected"))
        )
        await editor.do(lambda page: page.check("input[name=view][value=marked]"))

        # accept one: the person's document settles
        def accept_first(page: Page) -> None:
            with page.expect_navigation():
                page.click(f"#card-{first} button.accept")

        await editor.do(accept_first)
        assert await editor.do(lambda page: page.url) == f"{site.url}{site.review_url('Three')}"
        settled = await person.wait_text(contains="The slow red fox")
        assert "quick brown" not in settled and first not in settled

        # reject one with a note: the text comes back, the assistant reads the note
        note = "Keep the dog: the pangram needs it."

        def reject_second(page: Page) -> None:
            page.fill(f"#note-{second_uid}", note)
            with page.expect_navigation():
                page.click(f"#card-{second_uid} button.reject")

        await editor.do(reject_second)
        settled = await person.wait_text(contains="over the lazy dog.")
        assert second_uid not in settled
        told = await call(assistant, "list_suggestions", {"path": three})
        assert f"{second_uid} REJECTED" in told and f"Reviewer's note: {note}" in told

        # a new suggestion and a person's edit appear on the open page without a reload
        await editor.do(lambda page: page.evaluate("window.__stillHere = true"))
        fourth = await suggest(assistant, three, "Rivers run", "Streams flow")
        await editor.do(lambda page: page.wait_for_selector(f"#card-{fourth}", timeout=10_000))
        assert (
            await editor.do(
                lambda page: page.locator(f"#note-marked ins.sg[data-uid='{fourth}']").inner_text()
            )
            == "Streams flow"
        )
        current = await person.text()
        await person.insert(len(current.encode("utf-16-le")) // 2, "A line a person added.\n")
        await editor.do(lambda page: page.wait_for_selector("#note-marked >> text=A line a person added."))
        assert await editor.do(lambda page: page.evaluate("window.__stillHere")) is True
        assert await editor.do(lambda page: page.locator(".card").count()) == 2

        # Accept all, after a confirmation, with one summary
        def accept_all(page: Page) -> str:
            with page.expect_navigation():
                page.click("#accept-all")
            confirmation = page.inner_text("#decide-all")
            with page.expect_navigation():
                page.click("#confirm-decide-all")
            return confirmation

        confirmation = str(await editor.do(accept_all))
        assert "Yes, accept 2 suggestions" in confirmation and "morning" in confirmation
        assert await editor.do(lambda page: page.locator("ul.messagelist li.success").all_inner_texts()) == [
            "2 accepted"
        ]
        final = (
            "# Three\n\nThe slow red fox jumps over the lazy dog.\nBirds sing in the evening.\n\n"
            "Streams flow to the sea. See [[Second]] and [[Nowhere]].\nA line a person added.\n"
        )
        assert await person.wait_text(equals=final) == final
        assert third and await editor.do(lambda page: page.is_visible("#nothing-pending"))
        # the presence left by now (a few seconds after the last write)
        await wait_for(lambda: _absent(person), timeout=10, what="assistant presence gone")

    # on to the next document waiting for review
    def next_document(page: Page) -> str:
        with page.expect_navigation():
            page.click("#next-document")
        return page.url

    assert await editor.do(next_document) == f"{site.url}{site.review_url('Second')}"
    assert await editor.do(lambda page: page.locator("#note-marked ins.sg").all_inner_texts()) == ["awaits"]

    # a reviewer without the permission sees the suggestions and the reason, and no buttons
    await intern.goto(site.review_url("Second"))
    reason = str(await intern.do(lambda page: page.inner_text("#no-review-reason")))
    assert "Can review (accept or reject) suggestions" in reason
    assert (
        await intern.do(lambda page: page.locator("button.accept, button.reject, #accept-all").count()) == 0
    )
    assert await intern.do(lambda page: page.locator("#note-marked ins.sg").count()) == 1
    await intern.shot("review-page-without-permission")


async def _absent(person: YClient) -> bool:
    return await assistant_presence(person) is None


async def test_hostile_note_and_suggestion_text_stays_inert_in_the_browser(site: Site, editor: Tab) -> None:
    hostile = f"{DESK}/Hostile.md"
    async with mcp_client(site.url, site.relay.tokens["suggest"]) as assistant:
        await suggest(
            assistant,
            hostile,
            "Plain words",
            '<img src=y onerror="window.__xss = 9"> [go](javascript:window.__xss=10)',
        )
        await editor.goto(site.review_url("Hostile"))
        await editor.do(lambda page: page.wait_for_selector("#note-marked"))
        await editor.do(lambda page: page.evaluate("window.__stillHere = true"))
        # one more arrives while the page is open: the live swap must be as inert as the first render
        late = await suggest(
            assistant, hostile, "to change", '<svg onload="window.__xss = 11"></svg> changed'
        )
        await editor.do(lambda page: page.wait_for_selector(f"#card-{late}", timeout=10_000))

    def inspect(page: Page) -> dict[str, object]:
        for view in ("accepted", "rejected", "marked"):
            page.check(f"input[name=view][value={view}]")
        for element in page.locator("#review-live a, #review-live .wikilink").all():
            if element.is_visible():
                element.hover()
        page.wait_for_timeout(500)
        return {
            "xss": page.evaluate("window.__xss"),
            "still_here": page.evaluate("window.__stillHere"),
            "dangerous": page.locator(DANGEROUS).count(),
            "text": page.inner_text("#note-marked"),
            "cards": page.inner_text("#suggestion-cards"),
        }

    seen = await editor.do(inspect)
    assert seen["xss"] is None and seen["still_here"] is True
    assert seen["dangerous"] == 0
    for payload in ("<script>window.__xss = 1</script>", '<img src=x onerror="window.__xss = 2">'):
        assert payload in str(seen["text"])  # shown as text
    assert '<svg onload="window.__xss = 11"></svg>' in str(seen["cards"])

    # the suggestion's own page and the Accept all confirmation are as inert
    def other_pages(page: Page) -> object:
        page.goto(f"{site.url}/admin/suggestions/suggestion/?q={late}")
        with page.expect_navigation():
            page.click("#result_list th.field-path a")
        page.goto(
            f"{site.url}/admin/suggestions/suggestion/document/{site.doc_ids['Hostile']}/decide-all/?decision=accept"
        )
        page.wait_for_timeout(300)
        return page.evaluate("window.__xss")

    assert await editor.do(other_pages) is None


async def test_first_impressions_landing_page_and_offline_api_docs(site: Site, editor: Tab) -> None:
    def landing(page: Page) -> tuple[str, str]:
        page.goto(f"{site.url}/")
        return page.inner_text("h1"), page.inner_text("#mcp-command")

    heading, command = await editor.do(landing)  # type: ignore[misc]
    assert heading == "Lens Relay" and f"{site.url}/mcp" in command

    def docs(page: Page) -> str:
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        page.goto(f"{site.url}/api/docs")
        page.wait_for_selector(".swagger-ui .info .title", timeout=15_000)
        assert requested and all(url.startswith(site.url) for url in requested), requested
        return page.inner_text(".swagger-ui .info .title")

    assert "Lens Relay" in str(await editor.do(docs))

    def admin_header(page: Page) -> str:
        page.goto(f"{site.url}/admin/")
        return page.inner_text("#site-name")

    assert await editor.do(admin_header) == "Lens Relay"
