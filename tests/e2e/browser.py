"""Shared by the browser tests: headless Chromium on a thread of its own, signed-in admin pages, and the
official MCP client's calls.

Playwright's sync API runs on a thread of its own (its objects belong to the thread that made them), so the
async tests keep their event loop for the Node clients and the MCP client while the browser works.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

T = TypeVar("T")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
BROWSER_TIMEOUT_MS = 15_000
MCP_TIMEOUT = 30.0
PASSWORD = "correct horse battery staple"


# -- the browser, on its own thread ------------------------------------------------------------------------


class BrowserThread:
    """Headless Chromium driven through Playwright's sync API on one dedicated thread."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chromium")
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    @property
    def browser(self) -> Browser:
        assert self._browser is not None
        return self._browser

    def start(self) -> None:
        self.call(self._start)

    def _start(self) -> None:
        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

    def close(self) -> None:
        def stop() -> None:
            if self._browser is not None:
                self._browser.close()
            if self._playwright is not None:
                self._playwright.stop()

        self.call(stop)
        self._pool.shutdown()

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the browser thread and wait for it (from sync code: fixtures)."""
        return self._pool.submit(fn).result()

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the browser thread without blocking the test's event loop."""
        return await asyncio.wrap_future(self._pool.submit(fn))


def signed_in_context(
    thread: BrowserThread, base_url: str, username: str, password: str = PASSWORD
) -> BrowserContext:
    """A browser context (its own cookies) in which ``username`` signed in through the admin login form."""

    def sign_in() -> BrowserContext:
        context = thread.browser.new_context()
        context.set_default_timeout(BROWSER_TIMEOUT_MS)
        page = context.new_page()
        page.goto(f"{base_url}/admin/login/?next=/admin/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("input[type=submit]")
        page.wait_for_url(f"{base_url}/admin/")
        assert page.locator("#user-tools").inner_text().upper().startswith(f"WELCOME, {username.upper()}")
        page.close()
        return context

    return thread.call(sign_in)


def open_editor(page: Page, url: str) -> None:
    """Open the browser editor at ``url`` and wait until its note is synced."""
    page.goto(url)
    page.wait_for_selector("#lr-editor[data-synced=true]")


class AdminPage:
    """A page (tab) of a signed-in context on the admin; every method runs on the browser thread."""

    def __init__(self, thread: BrowserThread, base_url: str, page: Page) -> None:
        self.thread = thread
        self.base_url = base_url
        self.page = page

    @classmethod
    async def open(cls, thread: BrowserThread, base_url: str, context: BrowserContext) -> AdminPage:
        return cls(thread, base_url, await thread.run(context.new_page))

    async def close(self) -> None:
        await self.thread.run(self.page.close)

    async def do(self, fn: Callable[[Page], T]) -> T:
        return await self.thread.run(lambda: fn(self.page))

    async def open_suggestion(self, uid: str) -> None:
        """Find the suggestion in the changelist (search by its id) and open it, as an editor would."""

        def open_it(page: Page) -> None:
            page.goto(f"{self.base_url}/admin/suggestions/suggestion/?q={uid}&status=all")
            rows = page.locator("#result_list tbody tr")
            assert rows.count() == 1, page.content()
            rows.first.locator("th.field-path a").click()
            page.wait_for_selector("#suggestion-review")

        await self.do(open_it)

    async def field(self, name: str) -> str:
        return await self.do(lambda page: page.locator(f".field-{name} .readonly").inner_text().strip())

    async def decide(self, decision: str, note: str = "") -> None:
        def click(page: Page) -> None:
            if note:
                page.fill("#id_decision_note", note)
            with page.expect_navigation():
                page.click(f"#suggestion-{decision}")

        await self.do(click)

    async def messages(self, level: str) -> list[str]:
        return await self.do(
            lambda page: [m.strip() for m in page.locator(f"ul.messagelist li.{level}").all_inner_texts()]
        )


def text_result(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    text = text_result(result)
    assert result.is_error is False, text
    return text


@asynccontextmanager
async def mcp_client(base_url: str, token: str) -> AsyncIterator[Client]:
    """The official MCP SDK client on ``/mcp`` with a bearer token."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=MCP_TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
        async with Client(transport) as client:
            yield client
