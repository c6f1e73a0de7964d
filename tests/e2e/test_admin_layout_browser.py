"""The admin's lists at 1280 px in headless Chromium: the filter sidebar covers no column and none is cut
off at the list's edge (the suggestions'
Review button, the tokens' status, the documents' id), rows stay one line high, and the trash list says
when, by whom and from where each entry was deleted. Screenshots go to ``$LENSRELAY_SCREENSHOTS``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, BrowserThread, mcp_client, signed_in_context
from .relay import Relay
from .test_review_page_browser import suggest

pytestmark = pytest.mark.e2e

SCREENSHOTS = Path(os.environ.get("LENSRELAY_SCREENSHOTS", "/tmp/lensrelay-screenshots"))
WIDTH = 1280
MAX_ROW_PX = 60
FOLDER = "Research Notes"
NOTES = {
    "Projects/Quarterly planning and roadmap review.md": "# Plan\n\nThe main goal: growth.\n",
    "Projects/Ideas.md": "# Ideas\n\nA main idea: write more.\n",
    "Daily/2026-11-26 meeting notes with the team.md": "# Meeting\n\nWe agreed on the main points.\n",
    "Gone.md": "# Gone\n\nSoon in the trash.\n",
}
_SETUP = """
from django.contrib.auth.models import User
User.objects.create_superuser("admin", "admin@example.org", {password!r})
print("E2E-LAYOUT ok")
"""


@pytest.fixture(scope="module")
def site(relay: Relay, browser_thread: BrowserThread, tmp_path_factory: pytest.TempPathFactory) -> Relay:
    vault = tmp_path_factory.mktemp("layout-vault")
    for name, text in NOTES.items():
        (vault / name).parent.mkdir(parents=True, exist_ok=True)
        (vault / name).write_text(text, encoding="utf-8")
    relay.import_vault(vault, folder=FOLDER)
    assert "E2E-LAYOUT ok" in relay.manage("shell", "-c", _SETUP.format(password=PASSWORD))
    relay.create_token(name="claude-research-assistant-with-a-long-name", role="suggest", folders=[FOLDER])

    async def propose() -> None:
        async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
            for name in ("Projects/Quarterly planning and roadmap review.md", "Projects/Ideas.md"):
                await suggest(assistant, f"{FOLDER}/{name}", "main", "main and only")
            await suggest(
                assistant,
                f"{FOLDER}/Daily/2026-11-26 meeting notes with the team.md",
                "main points",
                "next steps",
            )

    asyncio.run(propose())
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return relay


@pytest.fixture(scope="module")
def admin_context(site: Relay, browser_thread: BrowserThread) -> Iterator[BrowserContext]:
    context = signed_in_context(browser_thread, site.http_url, "admin")
    yield context
    browser_thread.call(context.close)


def _box(page: Page, selector: str) -> dict[str, float] | None:
    box: Any = page.locator(selector).first.bounding_box() if page.locator(selector).count() else None
    return box  # type: ignore[no-any-return]


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def check_list(page: Page, url: str, name: str, columns: list[str]) -> dict[str, Any]:
    """Open a changelist at 1280 px; the boxes of the sidebar, the named columns' cells and the rows."""
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(url)
    page.wait_for_selector("#result_list")
    page.screenshot(path=str(SCREENSHOTS / f"{name}-1280.png"), full_page=True)
    sidebar = _box(page, "#changelist-filter")
    shown = _box(page, "#changelist .results")  # scrolls sideways: a cell past its edge is cut off
    covered = []
    for column in columns:
        for cell in page.locator(f"#result_list tbody {column}").all():
            box = cell.bounding_box()
            assert box is not None, column
            cut = shown is not None and box["x"] + box["width"] > shown["x"] + shown["width"] + 0.5
            if cut or (sidebar is not None and _overlap(sidebar, box)):
                covered.append(column)
                break
    heights = [row.bounding_box()["height"] for row in page.locator("#result_list tbody tr").all()]  # type: ignore[index]
    table = _box(page, "#result_list")
    return {"covered": covered, "heights": heights, "table": table, "sidebar": sidebar}


async def test_lists_at_1280_px_leave_every_column_visible_and_rows_one_line_high(
    site: Relay, admin_context: BrowserContext, browser_thread: BrowserThread
) -> None:
    page = await browser_thread.run(admin_context.new_page)
    base = site.http_url

    def look() -> dict[str, dict[str, Any]]:
        return {
            "suggestions": check_list(
                page, f"{base}/admin/suggestions/suggestion/", "suggestions-list", ["td.field-review_link a"]
            ),
            "tokens": check_list(
                page, f"{base}/admin/lensrelay/apitoken/", "tokens-list", ["td.field-status"]
            ),
            "documents": check_list(
                page, f"{base}/admin/lensrelay/document/", "documents-list", ["td.field-doc_id"]
            ),
        }

    seen = await browser_thread.run(look)
    for name, found in seen.items():
        assert found["covered"] == [], (name, found)
        assert found["heights"] and max(found["heights"]) < MAX_ROW_PX, (name, found["heights"])
    await browser_thread.run(page.close)


async def test_the_trash_list_says_when_by_whom_and_from_where(
    site: Relay, admin_context: BrowserContext, browser_thread: BrowserThread
) -> None:
    page = await browser_thread.run(admin_context.new_page)
    base = site.http_url

    def delete_and_list() -> dict[str, Any]:
        page.set_viewport_size({"width": WIDTH, "height": 900})
        page.goto(f"{base}/admin/lensrelay/document/?q=Gone")
        page.locator("#result_list tbody tr").first.locator("input.action-select").check()
        page.select_option("select[name=action]", "delete_selected")
        with page.expect_navigation():
            page.click("button[name=index]")
        found = check_list(
            page, f"{base}/admin/lensrelay/document/?trash=yes", "trash-list", ["td.field-doc_id"]
        )
        found["row"] = page.locator("#result_list tbody tr", has_text="Gone.md").inner_text()
        return found

    found = await browser_thread.run(delete_and_list)
    assert found["covered"] == [] and max(found["heights"]) < MAX_ROW_PX, found
    assert "just now" in found["row"] and "admin" in found["row"] and f"{FOLDER}/Gone.md" in found["row"], (
        found
    )
    await browser_thread.run(page.close)


async def test_the_review_page_at_1280_px_decides_then_undoes_from_recent_decisions(
    site: Relay, admin_context: BrowserContext, browser_thread: BrowserThread
) -> None:
    page = await browser_thread.run(admin_context.new_page)
    doc_id = await site.doc_id(site.tokens["edit"], folder=FOLDER, path="Projects/Ideas.md")
    review = f"{site.http_url}/admin/suggestions/suggestion/document/{doc_id}/review/"

    def decide_and_undo() -> dict[str, Any]:
        page.set_viewport_size({"width": WIDTH, "height": 900})
        page.goto(review)
        page.wait_for_selector("#note-marked ins.sg")
        note, cards = _box(page, "#note"), _box(page, "#suggestion-cards")
        assert note is not None and cards is not None and not _overlap(note, cards)
        with page.expect_navigation():
            page.click(".card button.accept")
        page.wait_for_selector("#recent-decisions")
        page.screenshot(path=str(SCREENSHOTS / "review-recent-decisions-1280.png"), full_page=True)
        after_accept = {
            "accept_all": page.locator("#accept-all").count(),
            "recent": page.inner_text("#recent-decisions"),
            "marks": page.locator("#note-marked ins.sg").count(),
        }
        with page.expect_navigation():
            page.click("#recent-decisions button.undo")
        page.wait_for_selector("#note-marked ins.sg")
        page.screenshot(path=str(SCREENSHOTS / "review-after-undo-1280.png"), full_page=True)
        return {
            **after_accept,
            "message": page.inner_text("ul.messagelist"),
            "cards": page.locator(".card").count(),
            "accept_all_after": page.locator("#accept-all").count(),
        }

    seen = await browser_thread.run(decide_and_undo)
    assert seen["accept_all"] == 0 and seen["marks"] == 0, seen
    assert "Recent decisions" in seen["recent"] and "accepted" in seen["recent"], seen
    assert "Undone:" in seen["message"] and "pending again" in seen["message"], seen
    assert seen["cards"] == 1 and seen["accept_all_after"] == 1, seen
    await browser_thread.run(page.close)
