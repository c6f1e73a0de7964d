"""/mcp rules of every protocol era: auth, Origin, Accept, Content-Type, body size, JSON, methods."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from lensrelay.access.tokens import token_revoke
from lensrelay.models import ApiToken
from tests.mcp_tools.test_transport_support import BOTH, HANDSHAKE, Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


# ------------------------------------------------------------------------------------------------ auth


async def test_no_token_is_401_with_a_bearer_challenge(http: httpx.AsyncClient) -> None:
    reply = await Mcp(http, None).post(INITIALIZE)
    assert reply.status == 401
    assert reply.headers["WWW-Authenticate"].startswith("Bearer")
    assert "invalid_token" not in reply.headers["WWW-Authenticate"]
    assert "Mcp-Session-Id" not in reply.headers


async def test_wrong_token_is_401_invalid_token(http: httpx.AsyncClient) -> None:
    reply = await Mcp(http, "lr_wrong").post(INITIALIZE)
    assert reply.status == 401
    assert 'error="invalid_token"' in reply.headers["WWW-Authenticate"]
    assert "Unauthorized" in reply.error["message"]


async def test_a_non_bearer_authorization_header_is_401(
    http: httpx.AsyncClient, tokens: TokenFactory
) -> None:
    raw = await tokens("edit")
    response = await http.post(
        "/mcp", json=INITIALIZE, headers={"Authorization": f"Basic {raw}", "Accept": BOTH}
    )
    assert response.status_code == 401


@pytest.mark.parametrize("how", ["revoked", "expired"])
async def test_revoked_and_expired_tokens_are_401(
    http: httpx.AsyncClient, tokens: TokenFactory, how: str
) -> None:
    raw = await tokens("edit")
    client = Mcp(http, raw)
    session = await client.initialize()

    def spoil() -> None:
        token = ApiToken.objects.get(token_hash=ApiToken.hash_token(raw))
        if how == "revoked":
            token_revoke(token=token)
        else:
            token.expires_at = timezone.now() - timedelta(seconds=1)
            token.save(update_fields=["expires_at"])

    await sync_to_async(spoil)()
    reply = await client.request("ping", session=session)
    assert reply.status == 401
    assert reply.headers["WWW-Authenticate"].startswith("Bearer")


async def test_every_method_needs_the_token(http: httpx.AsyncClient) -> None:
    for method in ("GET", "DELETE", "POST"):
        response = await http.request(method, "/mcp", headers={"Accept": BOTH})
        assert response.status_code == 401, method


async def test_a_token_in_the_query_string_is_ignored(http: httpx.AsyncClient, tokens: TokenFactory) -> None:
    raw = await tokens("edit")
    response = await http.post(
        f"/mcp?token={raw}&access_token={raw}", json=INITIALIZE, headers={"Accept": BOTH}
    )
    assert response.status_code == 401


async def test_anonymous_role_lets_tokenless_calls_in_only_when_configured(
    http: httpx.AsyncClient, settings: Any
) -> None:
    settings.LENSRELAY_MCP_ANONYMOUS_ROLE = "view"
    anonymous = Mcp(http, None)
    session = await anonymous.initialize()
    assert (await anonymous.request("ping", session=session)).result == {}
    # A token that is offered must still be valid.
    assert (await Mcp(http, "lr_wrong").post(INITIALIZE)).status == 401
    settings.LENSRELAY_MCP_ANONYMOUS_ROLE = ""
    assert (await anonymous.request("ping", session=session)).status == 401


async def test_a_session_belongs_to_its_token(http: httpx.AsyncClient, tokens: TokenFactory) -> None:
    alice, bob = Mcp(http, await tokens("edit", name="alice")), Mcp(http, await tokens("edit", name="bob"))
    session = await alice.initialize()
    assert (await bob.request("ping", session=session)).status == 404
    assert (await alice.request("ping", session=session)).status == 200


# ---------------------------------------------------------------------------------------------- Origin


@pytest.mark.parametrize(
    "origin", ["http://evil.example.com", "https://localhost.evil.com", "null", "file://"]
)
async def test_foreign_origins_are_403(mcp: Mcp, origin: str) -> None:
    reply = await mcp.post(INITIALIZE, headers={"Origin": origin})
    assert reply.status == 403
    assert "origin" in reply.error["message"].lower()


@pytest.mark.parametrize("origin", ["http://localhost:8000", "http://127.0.0.1", "https://localhost"])
async def test_our_own_origins_are_fine(mcp: Mcp, origin: str) -> None:
    reply = await mcp.post(INITIALIZE, headers={"Origin": origin})
    assert reply.status == 200


async def test_extra_origins_can_be_allowed(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_ALLOWED_ORIGINS = ["https://app.example.org"]
    assert (await mcp.post(INITIALIZE, headers={"Origin": "https://app.example.org"})).status == 200
    assert (await mcp.post(INITIALIZE, headers={"Origin": "https://other.example.org"})).status == 403


async def test_a_foreign_host_is_refused_before_the_view(mcp: Mcp) -> None:
    # DNS rebinding: Django's ALLOWED_HOSTS check answers 400 for a Host that is not ours.
    reply = await mcp.post(
        INITIALIZE, headers={"Host": "evil.example.com", "Origin": "http://evil.example.com"}
    )
    assert 400 <= reply.status < 500


# --------------------------------------------------------------------------------- Accept, types, size


async def test_an_unacceptable_accept_header_is_406(mcp: Mcp) -> None:
    reply = await mcp.post(INITIALIZE, accept="text/html")
    assert reply.status == 406


async def test_json_only_clients_get_json(mcp: Mcp) -> None:
    reply = await mcp.post(INITIALIZE, accept="application/json")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.result["protocolVersion"] == HANDSHAKE


async def test_sse_only_clients_get_an_event_stream(mcp: Mcp) -> None:
    reply = await mcp.post(INITIALIZE, accept="text/event-stream")
    assert reply.status == 200
    assert reply.is_sse
    assert reply.result["serverInfo"]["name"] == "lens-relay"
    assert reply.headers["Mcp-Session-Id"]


async def test_a_missing_accept_header_accepts_anything(mcp: Mcp) -> None:
    reply = await mcp.post(INITIALIZE, accept=None)
    assert reply.status == 200


async def test_a_non_json_content_type_is_415(mcp: Mcp) -> None:
    reply = await mcp.post(INITIALIZE, headers={"Content-Type": "text/plain"})
    assert reply.status == 415


async def test_an_oversized_body_is_413(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_MAX_BODY_BYTES = 1000
    padded = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * 2000}}
    reply = await mcp.post(padded)
    assert reply.status == 413
    assert "1000" in reply.error["message"]
    assert (await mcp.post(INITIALIZE)).status == 200


async def test_the_default_body_limit_is_four_mebibytes(mcp: Mcp, settings: Any) -> None:
    assert settings.LENSRELAY_MCP_MAX_BODY_BYTES == 4 * 1024 * 1024
    # Over Django's own 2.5 MB default for request.body, under ours: still accepted.
    padded = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * (3 * 1024 * 1024)}}
    assert (await mcp.post(padded)).status == 200
    padded["params"]["padding"] = "x" * (4 * 1024 * 1024)
    assert (await mcp.post(padded)).status == 413


@pytest.mark.parametrize("raw", [b"{not json", b"", b'{"jsonrpc": "2.0", "id": 1,', b"\xff\xfe"])
async def test_invalid_json_is_a_parse_error(mcp: Mcp, raw: bytes) -> None:
    reply = await mcp.post(None, raw=raw)
    assert reply.status == 400
    assert reply.error["code"] == -32700
    assert reply.message["id"] is None


# -------------------------------------------------------------------------------- versions and methods


async def test_an_unsupported_protocol_version_header_is_400_with_the_supported_list(mcp: Mcp) -> None:
    session = await mcp.initialize()
    for version in ("2024-11-05", "1999-01-01", "banana"):
        reply = await mcp.request("ping", session=session, version=version)
        assert reply.status == 400
        assert reply.error["code"] == -32022
        assert reply.error["data"]["supported"] == ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
        assert reply.error["data"]["requested"] == version


async def test_get_opens_the_notification_stream_of_a_session(mcp: Mcp, settings: Any) -> None:
    settings.LENSRELAY_MCP_STREAM_MAX_SECONDS = 0.3  # the stream ends by itself, so the body can be read
    session = await mcp.initialize()
    response = await mcp.http.get(
        "/mcp", headers=mcp.headers({"Mcp-Session-Id": session}, accept="text/event-stream")
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.text.startswith("id: 0\nretry: 1000\n")


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
async def test_other_http_methods_are_405(mcp: Mcp, method: str) -> None:
    response = await mcp.http.request(method, "/mcp", headers=mcp.headers())
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, POST, DELETE"
