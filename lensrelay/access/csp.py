"""A strict Content-Security-Policy on the admin's HTML pages (the review pages are admin pages too).

Stored text is rendered into these pages (note text, suggestions, paths); it is escaped and sanitized,
and this policy is the second wall: no inline script, no script from elsewhere, so text that imitates
markup still runs nothing. Django 5.2 has no CSP of its own, hence this small middleware. Inline
`style` stays allowed: the templates use it and a style cannot act with the signed-in person's session.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin

ADMIN_PREFIX = "/admin/"


def admin_csp(*, host: str, objects: bool = False) -> str:
    """The policy for an admin page served on `host` (WebSockets to the same host are allowed
    explicitly: not every browser counts ws: as 'self'). `objects` lets <object> load from this origin
    (the editor's PDF preview); everything else keeps 'none'."""
    return "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "media-src 'self'",
            f"connect-src 'self' ws://{host} wss://{host}",
            "object-src 'self'" if objects else "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            "frame-ancestors 'self'",
        )
    )


def editor_csp(*, host: str, objects: bool) -> str:
    """The editor page's policy: the admin's, with <object> from this origin only when it previews a PDF
    (images and audio/video already load from 'self'; the file route answers with its own sandbox)."""
    return admin_csp(host=host, objects=objects)


def _wants_policy(request: HttpRequest, response: HttpResponseBase) -> bool:
    return (
        request.path.startswith(ADMIN_PREFIX)
        and response.get("Content-Type", "").startswith("text/html")
        and "Content-Security-Policy" not in response
    )


class AdminCSPMiddleware(MiddlewareMixin):
    """Adds `admin_csp` to HTML responses under /admin/ (MiddlewareMixin serves sync and async stacks)."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if _wants_policy(request, response):
            response["Content-Security-Policy"] = admin_csp(host=request.get_host())
        return response
