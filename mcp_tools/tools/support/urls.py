"""Links to this server's pages for people: its address, and where the browser editor opens a document."""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse

from mcp_tools.registry import ToolContext


def public_base(ctx: ToolContext) -> str | None:
    """This server's address as people reach it, without a trailing slash: the one the transport worked
    out for the call (`ToolContext.public_base`), else LENSRELAY_PUBLIC_URL; None when neither is known."""
    given = ctx.public_base
    if given is not None and given.startswith(("http://", "https://")):
        return given.rstrip("/")
    configured = str(getattr(settings, "LENSRELAY_PUBLIC_URL", "") or "")
    return configured.rstrip("/") or None


def editor_path(doc_id: str) -> str:
    """The browser editor's page for a document (notes, text files and stored files alike)."""
    return reverse("admin:suggestions_suggestion_editor", args=[doc_id])
