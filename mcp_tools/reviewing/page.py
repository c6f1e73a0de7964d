"""The review page as an MCP Apps resource (`ui://lensrelay/review`): one self-contained HTML file, built
from editor/src/reviewapp/ by scripts/build-editor and committed, read once per process. It holds no
credential: the host calls the tools for it with the session's own."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from mcp_tools.registry import ToolContext
from mcp_tools.resources.providers import Resources, register_resource_provider
from mcp_tools.reviewing import APP_MIME_TYPE, REVIEW_APP_URI

PAGE = Path(__file__).resolve().parent / "app" / "review.html"


@cache
def page_html() -> str:
    return PAGE.read_text(encoding="utf-8")


def page_contents() -> dict[str, Any]:
    return {
        "uri": REVIEW_APP_URI,
        "mimeType": APP_MIME_TYPE,
        "text": page_html(),
        # No outside origin at all (the SEP's default CSP); a border, as the page draws none of its own.
        "_meta": {"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": True}},
    }


class ReviewAppProvider:
    """Reads the page for any caller (it is the same for all, and holds nothing of theirs); lists nothing,
    so `resources/list` stays the notes: hosts find the page through the review tool's `_meta.ui`."""

    async def list(self, ctx: ToolContext, cursor: str | None) -> tuple[Resources, str | None]:
        return [], None

    async def read(self, ctx: ToolContext, uri: str) -> Resources | None:
        return [page_contents()] if uri == REVIEW_APP_URI else None

    def templates(self) -> Resources:
        return []


register_resource_provider(ReviewAppProvider(), first=True)
