"""The WebSocket middleware: Channels' cookie, session and user stack, for sockets without a token only.

Channels' AuthMiddleware loads the session's user before the consumer starts, on Django's sync thread:
a thread trip on every connect, so on every first sync. A y-websocket client of the relay authenticates
with its `?token=`, which the consumer checks itself and which never falls back to the session, so those
sockets skip the whole stack (cookie parsing, the session wrapper around every send, the user lookup)
and get an anonymous user. Sockets without a token (our own pages, signed in to the admin) get the
session's user exactly as before.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, SessionMiddleware
from django.contrib.auth.models import AnonymousUser


def query_token(scope: dict[str, Any]) -> str | None:
    """The `token` query parameter of a WebSocket's URL, if it has a non-blank one."""
    query = parse_qs(scope.get("query_string", b"").decode(errors="replace"))
    return (query.get("token") or [None])[0] or None


def auth_stack(inner: Any) -> Any:
    session_stack = CookieMiddleware(SessionMiddleware(AuthMiddleware(inner)))

    async def token_or_session(scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if query_token(scope):
            return await inner({**scope, "user": AnonymousUser()}, receive, send)
        return await session_stack(scope, receive, send)

    return token_or_session
