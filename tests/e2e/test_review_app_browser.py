"""The MCP Apps review, from outside: a host built from the ext-apps SDK's `app-bridge` export (and the
official MCP client) runs in headless Chromium against a served Lens Relay, on a person's OAuth grant. It
calls `review_suggestions` as a model would and loads the `ui://` page into a sandboxed iframe; the page
shows the note's pending suggestions (hostile text inert), the test clicks Accept in it, and a person's npm
y-websocket client sees each change settle. The model's own call of the app-only tool is refused, and a
plain API token's session shows the page without Accept.

Prints how long from the page's decision call (and from the click) until the y-websocket client has the
settled text (bench/RESULTS.md).
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Frame, Page, Route

from mcp_tools.reviewing import APP_MIME_TYPE, REVIEW_APP_URI

from .browser import BrowserThread, call, mcp_client
from .conftest import YClientFactory
from .relay import Relay

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ESBUILD = ROOT / "editor" / "node_modules" / ".bin" / "esbuild"
HOST_SOURCE = Path(__file__).resolve().parent / "appshost" / "host.mjs"
FOLDER, REVIEWER = "Desk", "rita"
PATH = f"{FOLDER}/Plan.md"
NOTE = "# Plan\n\nThe quick brown fox jumps.\nA lazy dog sleeps.\nThe end is near.\n"
HOSTILE_IMG = "<img src=x onerror=window.pwned=1>"
HOSTILE_SCRIPT = "</script><script>window.pwned=2</script>"
# (old, new, what the note reads once accepted)
EDITS = [
    ("quick brown", "slow red", "The slow red fox jumps."),
    ("lazy dog", f"dog {HOSTILE_IMG}", f"A dog {HOSTILE_IMG} sleeps."),
    ("end is near", f"end {HOSTILE_SCRIPT}", f"The end {HOSTILE_SCRIPT}."),
]
SETTLED = f"# Plan\n\nThe slow red fox jumps.\nA dog {HOSTILE_IMG} sleeps.\nThe end {HOSTILE_SCRIPT}.\n"
_MARKER = "E2E-REVIEWAPP "
_SETUP = """
import json
from datetime import timedelta
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application
from lensrelay.access.oauth import grant_create
call_command("import_vault", {desk!r}, folder={folder!r})
rita = User.objects.create_user({reviewer!r}, password="pw", is_staff=True)
rita.user_permissions.set(
    Permission.objects.filter(codename__in=["view_suggestion", "review_suggestion", "view_document"])
)
rita = User.objects.get(pk=rita.pk)
app = Application.objects.create(
    name="Chat", client_type=Application.CLIENT_PUBLIC,
    authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris="http://127.0.0.1:1/cb",
)
grant_create(user=rita, application=app, role="suggest", folders=())
AccessToken.objects.create(
    user=rita, application=app, token="oauth-review-rita", expires=timezone.now() + timedelta(hours=1),
    scope="mcp", resource=[{mcp_url!r}],
)
print({marker!r} + json.dumps("oauth-review-rita"))
"""


@pytest.fixture(scope="module")
def host_js(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The host page's script: host.mjs bundled with the editor's pinned esbuild and SDK packages."""
    out = tmp_path_factory.mktemp("appshost") / "host.js"
    subprocess.run(
        [
            str(ESBUILD),
            str(HOST_SOURCE),
            "--bundle",
            "--format=iife",
            "--target=es2020",
            "--log-level=warning",
            f"--outfile={out}",
        ],
        check=True,
        env={"NODE_PATH": str(ROOT / "editor" / "node_modules"), "PATH": "/usr/bin:/bin"},
    )
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def oauth_token(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> str:
    desk = tmp_path_factory.mktemp("desk")
    (desk / "Plan.md").write_text(NOTE, encoding="utf-8")
    script = _SETUP.format(
        desk=str(desk), folder=FOLDER, reviewer=REVIEWER, marker=_MARKER, mcp_url=f"{relay.http_url}/mcp"
    )
    lines = [line for line in relay.manage("shell", "-c", script).splitlines() if line.startswith(_MARKER)]
    token: str = json.loads(lines[0][len(_MARKER) :])
    return token


@pytest.fixture(scope="module")
def context(browser_thread: BrowserThread) -> Iterator[BrowserContext]:
    made = browser_thread.call(browser_thread.browser.new_context)
    yield made
    browser_thread.call(made.close)


@pytest.fixture
async def page(browser_thread: BrowserThread, context: BrowserContext) -> AsyncIterator[Page]:
    opened = await browser_thread.run(context.new_page)
    yield opened
    await browser_thread.run(opened.close)


def open_host(page: Page, relay: Relay, host_js: str, token: str, args: dict[str, str]) -> dict[str, Any]:
    """The host page, served at the relay's own origin (a route of the test, not of the server) so that
    its MCP client reaches /mcp without cross-origin requests; then the review shown in its iframe."""
    address = f"{relay.http_url}/__test_apps_host__"
    html = '<!doctype html><html><body><script src="/__test_apps_host__.js"></script></body></html>'

    def serve(route: Route) -> None:
        if route.request.url.endswith(".js"):
            route.fulfill(status=200, content_type="text/javascript", body=host_js)
        else:
            route.fulfill(status=200, content_type="text/html", body=html)

    page.route(f"{address}*", serve)
    page.goto(address)
    started: dict[str, Any] = page.evaluate(
        "(x) => startReview(x)", {"token": token, "tool": "review_suggestions", "args": args}
    )
    page.wait_for_function("window.appReady === true")
    return started


def app_frame(page: Page) -> Frame:
    iframe = page.wait_for_selector("#app")
    frame = iframe.content_frame() if iframe is not None else None
    assert frame is not None
    return frame


async def test_a_person_accepts_in_the_app_and_everyone_settles(
    relay: Relay,
    oauth_token: str,
    host_js: str,
    browser_thread: BrowserThread,
    page: Page,
    yclients: YClientFactory,
) -> None:
    paths = await relay.document_paths(relay.tokens["edit"], folder=FOLDER)
    doc_id = paths[PATH]
    person = await yclients(
        relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="person"
    )
    await person.wait_text(equals=NOTE)
    uids = []
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        await call(assistant, "read", {"file_path": PATH})
        for old, new, _ in EDITS:
            answer = await call(assistant, "edit", {"file_path": PATH, "old_string": old, "new_string": new})
            found = re.search(r"\(suggestion ([0-9a-f]+), pending", answer)
            assert found, answer
            uids.append(found.group(1))
    await person.wait_text(contains="sleeps")

    async with mcp_client(relay.http_url, oauth_token) as model:
        # The model calls the app-only tool itself: refused, nothing changes.
        refused = await model.call_tool("review_decide", {"suggestion": uids[0], "decision": "accept"})
        assert refused.is_error and "only be called by the Lens Relay review app" in str(refused.content)

    started = await browser_thread.run(lambda: open_host(page, relay, host_js, oauth_token, {"path": PATH}))
    assert started == {"mimeType": APP_MIME_TYPE, "uri": REVIEW_APP_URI, "hasKey": True, "modelSawKey": False}
    model_tools = await browser_thread.run(lambda: page.evaluate("window.modelTools"))
    assert "review_suggestions" in model_tools and "review_decide" not in model_tools

    def shown(page: Page) -> dict[str, Any]:
        frame = app_frame(page)
        frame.wait_for_selector("section.card")
        return {
            "cards": frame.eval_on_selector_all("section.card", "s => s.map(c => c.dataset.suggestion)"),
            "text": frame.inner_text("main"),
            "struck": frame.eval_on_selector_all("del", "s => s.map(d => d.textContent)"),
            "marked": frame.eval_on_selector_all("ins", "s => s.map(d => d.textContent)"),
            "images": frame.locator("img").count(),
            "scripts": frame.locator("script").count(),
            "pwned": frame.evaluate("window.pwned === undefined ? null : window.pwned"),
        }

    seen = await browser_thread.run(lambda: shown(page))
    assert seen["cards"] == uids
    assert HOSTILE_IMG in seen["marked"][1] and HOSTILE_SCRIPT in seen["marked"][2]
    assert "quick brown" in seen["struck"] and "slow red" in seen["marked"]
    assert "The " in seen["text"] and "fox jumps." in seen["text"]  # the lines around the change
    assert seen["images"] == 0 and seen["scripts"] == 1 and seen["pwned"] is None

    def note(page: Page, uid: str) -> None:
        app_frame(page).fill(f'section[data-suggestion="{uid}"] input', "fine by me")

    def accept(page: Page, uid: str) -> None:
        app_frame(page).click(f'section[data-suggestion="{uid}"] button.accept')

    timings, settled_at = [], []
    for uid, (_, _, settled_line) in list(zip(uids, EDITS, strict=True))[:1]:
        await browser_thread.run(lambda uid=uid: note(page, uid))
        clicked = time.perf_counter()
        await browser_thread.run(lambda uid=uid: accept(page, uid))
        await person.wait_text(contains=settled_line)
        timings.append(time.perf_counter() - clicked)
        settled_at.append(time.time() * 1000)  # the browser's Date.now() is the same clock

    # A person quicker than the list: the next card's note typed and Accept pressed while the list is still
    # being shown again after the previous decision (that refresh dropped the note, and the single-use key
    # was not back yet), and the list shown again while the button is held down (the card under the
    # pointer was replaced between the press and the release, and the click was lost).
    def quick(page: Page) -> None:
        page.evaluate("window.slowTools = {review_suggestions: 800}")  # the list comes back late
        lists = "window.appCalls.filter(c => c.name === 'review_suggestions').length"
        shown = page.evaluate(lists)
        note(page, uids[1])
        accept(page, uids[1])
        note(page, uids[2])
        box = app_frame(page).locator(f'section[data-suggestion="{uids[2]}"] button.accept').bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.wait_for_function(f"{lists} > {shown}")
        page.wait_for_timeout(200)  # the list has reached the page
        page.mouse.up()

    await browser_thread.run(lambda: quick(page))
    assert await person.wait_text(equals=SETTLED) == SETTLED
    settled_at += [time.time() * 1000] * 2

    def told(page: Page) -> str:
        frame = app_frame(page)
        frame.wait_for_selector("text=Nothing is pending here.")
        return frame.inner_text("#status")

    assert "as rita" in await browser_thread.run(lambda: told(page))
    calls = await browser_thread.run(lambda: page.evaluate("window.appCalls"))
    decides = [c for c in calls if c["name"] == "review_decide"]
    assert len(decides) == 3
    call_to_settled = [seen - c["startedAt"] for seen, c in zip(settled_at, decides, strict=True)]
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        listed = await call(assistant, "list_suggestions", {"path": PATH})
    assert all(f"{uid} ACCEPTED" in listed for uid in uids) and listed.count("decided by rita") == 3
    assert listed.count("Reviewer's note: fine by me") == 3
    print(
        f"\nreview app: click on Accept -> y-websocket client settled: median "
        f"{statistics.median(timings) * 1000:.0f} ms over {len(timings)} (each: "
        + ", ".join(f"{t * 1000:.0f}" for t in timings)
        + " ms); the app's review_decide call -> settled: median "
        f"{statistics.median(call_to_settled):.0f} ms (each: "
        + ", ".join(f"{t:.0f}" for t in call_to_settled)
        + f" ms); the call's round trip: median {statistics.median(c['ms'] for c in decides):.0f} ms"
    )


async def test_an_api_token_session_shows_the_app_without_accept(
    relay: Relay, oauth_token: str, host_js: str, browser_thread: BrowserThread, page: Page
) -> None:
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        await call(assistant, "read", {"file_path": PATH})
        await call(assistant, "edit", {"file_path": PATH, "old_string": "Plan", "new_string": "Planning"})
    started = await browser_thread.run(
        lambda: open_host(page, relay, host_js, relay.tokens["view"], {"path": PATH})
    )
    assert started["hasKey"] is False

    def shown(page: Page) -> tuple[str, int]:
        frame = app_frame(page)
        frame.wait_for_selector("section.card")
        return frame.inner_text("main"), frame.locator("button").count()

    text, buttons = await browser_thread.run(lambda: shown(page))
    assert "API token" in text and "Planning" in text and buttons == 0
