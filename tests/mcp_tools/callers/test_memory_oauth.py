"""/mcp with OAuth access tokens: the 401 names the resource metadata, a token works like an API token and
is kept in memory like one, and an expired, revoked or foreign-resource token is refused at once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from lensrelay.access.oauth import grant_create
from lensrelay.access.tokens import token_revoke
from lensrelay.models import ApiToken
from mcp_tools.callers import memory
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": HANDSHAKE,
        "capabilities": {},
        "clientInfo": {"name": "Claude", "version": "1"},
    },
}


def _oauth_token(raw: str, *, resource: str = "http://localhost/mcp", expires_in: int = 600) -> int:
    user = User.objects.filter(username="alice").first() or User.objects.create_superuser(
        "alice", password="pw"
    )
    application = Application.objects.create(
        name="Claude",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1:7777/callback",
    )
    grant = grant_create(user=user, application=application, role="suggest", folders=())
    AccessToken.objects.create(
        user=user,
        application=application,
        token=raw,
        expires=timezone.now() + timedelta(seconds=expires_in),
        scope="mcp",
        resource=[resource],
    )
    return grant.pk


oauth_token = sync_to_async(_oauth_token)


async def test_the_401_names_the_resource_metadata(http: httpx.AsyncClient) -> None:
    reply = await Mcp(http, None).post(INITIALIZE)
    assert reply.status == 401
    challenge = reply.headers["WWW-Authenticate"]
    assert 'resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"' in challenge
    assert "OAuth" in reply.error["message"]


async def test_an_oauth_token_opens_a_session_as_its_grant(http: httpx.AsyncClient) -> None:
    grant_id = await oauth_token("oauth-good")
    mcp = Mcp(http, "oauth-good")
    session = await mcp.initialize()
    assert session
    grant = await ApiToken.objects.aget(pk=grant_id)
    assert grant.last_used_at is not None and grant.name == "alice · Claude"


async def test_an_oauth_token_is_checked_without_a_query_per_call(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await oauth_token("oauth-kept")
    lookups: list[str] = []
    real = memory.oauth_token_access

    def counted(raw: str, *, surface: str) -> Any:
        lookups.append(raw)
        return real(raw, surface=surface)

    monkeypatch.setattr(memory, "oauth_token_access", counted)
    mcp = Mcp(http, "oauth-kept")
    session = await mcp.initialize()
    for number in range(5):
        reply = await mcp.post({"jsonrpc": "2.0", "id": 10 + number, "method": "ping"}, session=session)
        assert reply.status == 200
    # Looked up once, then kept in memory until credentials change anywhere (the generation counter).
    assert lookups == ["oauth-kept"]


async def test_expired_revoked_and_foreign_tokens_are_refused(http: httpx.AsyncClient) -> None:
    await oauth_token("oauth-expired", expires_in=-1)
    assert (await Mcp(http, "oauth-expired").post(INITIALIZE)).status == 401
    await oauth_token("oauth-api", resource="http://localhost/api")
    assert (await Mcp(http, "oauth-api").post(INITIALIZE)).status == 401

    grant_id = await oauth_token("oauth-revoked")
    mcp = Mcp(http, "oauth-revoked")
    await mcp.initialize()
    grant = await ApiToken.objects.aget(pk=grant_id)
    await sync_to_async(token_revoke)(token=grant)
    reply = await mcp.post(INITIALIZE)
    assert reply.status == 401 and 'error="invalid_token"' in reply.headers["WWW-Authenticate"]


async def test_a_token_revoked_at_the_endpoint_is_refused_at_once(http: httpx.AsyncClient) -> None:
    await oauth_token("oauth-deleted")
    mcp = Mcp(http, "oauth-deleted")
    await mcp.initialize()
    await AccessToken.objects.filter(token="oauth-deleted").adelete()
    assert (await mcp.post(INITIALIZE)).status == 401


async def test_a_person_who_stops_being_staff_stops_their_assistant(http: httpx.AsyncClient) -> None:
    await oauth_token("oauth-person")
    mcp = Mcp(http, "oauth-person")
    await mcp.initialize()
    await User.objects.filter(username="alice").aupdate(is_staff=False)
    user = await User.objects.aget(username="alice")
    await sync_to_async(user.save)()  # as the admin's change form does: the save is the signal
    assert (await mcp.post(INITIALIZE)).status == 401
