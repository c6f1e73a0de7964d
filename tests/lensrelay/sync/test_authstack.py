"""The WebSocket middleware loads the session's user only for sockets without a token."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore

from lensrelay.sync.authstack import auth_stack, query_token

pytestmark = pytest.mark.django_db(transaction=True)


def staff_session() -> str:
    user = User.objects.create_superuser("editor", "editor@example.org", "x")
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    assert session.session_key is not None
    return session.session_key


async def user_seen(query: bytes, session_key: str) -> Any:
    seen: dict[str, Any] = {}

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen["user"] = scope["user"]
        seen["session"] = "session" in scope

    cookie = f"{settings.SESSION_COOKIE_NAME}={session_key}".encode()
    scope = {"type": "websocket", "path": "/ws/x", "query_string": query, "headers": [(b"cookie", cookie)]}
    await auth_stack(inner)(scope, None, None)
    return seen


async def test_a_socket_without_a_token_gets_the_sessions_user() -> None:
    key = await sync_to_async(staff_session)()
    seen = await user_seen(b"", key)
    assert seen["user"].is_authenticated and seen["user"].username == "editor"
    assert seen["session"]
    seen = await user_seen(b"token=", key)  # a blank token is no token
    assert seen["user"].is_authenticated


async def test_a_socket_with_a_token_never_gets_the_sessions_user() -> None:
    key = await sync_to_async(staff_session)()
    seen = await user_seen(b"token=abc", key)
    assert not seen["user"].is_authenticated
    # Nor the cookie and session middlewares: nothing of the session stack runs for it.
    assert not seen["session"]


def test_query_token() -> None:
    assert query_token({"query_string": b"a=1&token=xyz"}) == "xyz"
    assert query_token({"query_string": b"token="}) is None
    assert query_token({}) is None
