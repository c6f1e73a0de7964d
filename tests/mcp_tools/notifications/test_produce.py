"""Events made by the decision paths, and streams ended by what the poll finds (a revoked token)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from lensrelay.access.tokens import token_create, token_revoke
from lensrelay.models import ApiToken
from lensrelay.vault.folders import folder_create, folder_delete
from mcp_tools.models import McpEvent, McpSession
from mcp_tools.notifications import events
from suggestions.lifecycle import claims
from suggestions.lifecycle.follow import _settle
from suggestions.models import Suggestion
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)


def listening(name: str, *, level: str = "") -> str:
    now = timezone.now()
    McpSession.objects.create(
        id=name, protocol_version=HANDSHAKE, created_at=now, last_seen_at=now, log_level=level
    )
    events.stream_claim(session_id=name)
    return name


def proposed(session_id: str) -> Suggestion:
    return Suggestion.objects.create(
        doc_id="doc", path="Team/Plan.md", author="bot", tool="edit", session_id=session_id
    )


def logged(session_id: str) -> list[dict[str, Any]]:
    return [
        message["params"]["data"]
        for message in McpEvent.objects.filter(session_id=session_id).values_list("message", flat=True)
    ]


def methods_logged(session_id: str) -> list[str]:
    return [
        message["method"]
        for message in McpEvent.objects.filter(session_id=session_id).values_list("message", flat=True)
    ]


def test_an_admin_decision_is_logged_for_the_proposing_session_only() -> None:
    mine, other = listening("mine"), listening("other")
    row = proposed(mine)
    claim = claims.claim_decision(pk=row.pk, accept=False, user=None)
    assert isinstance(claim, claims.Claim)
    claims.settle_claim(claim=claim, user=None, note="not now")
    [data] = logged(mine)
    assert data["type"] == "suggestion_decided" and data["suggestion"] == row.uid
    assert data["status"] == "rejected" and data["note"] == "not now" and data["path"] == "Team/Plan.md"
    assert logged(other) == []


def test_an_acceptance_with_changes_tells_the_assistant_what_the_reviewer_changed() -> None:
    mine = listening("mine")
    row = proposed(mine)
    Suggestion.objects.filter(pk=row.pk).update(
        hunks=[{"old": "a", "new": "slow red"}, {"old": "b", "new": ""}]
    )
    claim = claims.claim_decision(pk=row.pk, accept=True, user=None)
    assert isinstance(claim, claims.Claim)
    claims.settle_claim(claim=claim, user=None, note="", revision=["slow ruby", ""])
    [data] = logged(mine)
    assert data["status"] == "accepted" and data["acceptedWithChanges"] is True
    assert data["changes"] == [
        {"proposed": "slow red", "accepted": "slow ruby", "difference": "slow {--red--}{++ruby++}"}
    ]


def test_an_editor_decision_and_a_stale_claim_are_logged_too() -> None:
    mine = listening("mine")
    accepted, stale = proposed(mine), proposed(mine)
    _settle([(accepted.pk, Suggestion.Status.ACCEPTED)])
    claim = claims.claim_decision(pk=stale.pk, accept=True, user=None)
    assert isinstance(claim, claims.Claim)
    claims.stale_claim(claim=claim)
    assert [(d["suggestion"], d["status"]) for d in logged(mine)] == [
        (accepted.uid, "accepted"),
        (stale.uid, "stale"),
    ]


def test_a_session_that_asked_for_errors_only_is_not_told_and_a_decision_never_fails() -> None:
    quiet = listening("quiet", level="error")
    row = proposed(quiet)
    _settle([(row.pk, Suggestion.Status.ACCEPTED)])
    assert logged(quiet) == []
    assert Suggestion.objects.get(pk=row.pk).status == Suggestion.Status.ACCEPTED


async def test_revoking_the_token_ends_its_open_stream(
    http: Any, tokens: TokenFactory, settings: Any
) -> None:
    settings.LENSRELAY_MCP_EVENTS_POLL_SECONDS = 0.1
    settings.LENSRELAY_MCP_STREAM_MAX_SECONDS = 5.0
    raw = await tokens("edit")
    client = Mcp(http, raw)
    session = await client.initialize()
    headers = client.headers({"Mcp-Session-Id": session}, accept="text/event-stream")

    async def revoke_soon() -> None:
        await asyncio.sleep(0.5)
        token = await ApiToken.objects.aget(token_hash=ApiToken.hash_token(raw))
        await sync_to_async(token_revoke)(token=token)

    started = time.monotonic()
    response, _ = await asyncio.gather(http.get("/mcp", headers=headers), revoke_soon())
    assert response.status_code == 200
    assert time.monotonic() - started < 3.0  # ended by the revocation, not by the 5 s limit


def test_deleting_a_folder_lists_changed_for_sessions_that_saw_it() -> None:
    kept, doomed = folder_create(name="Kept"), folder_create(name="Doomed")
    everyone = listening("everyone")
    _, raw = token_create(name="kept-only", role="view", folders=[kept])
    token = ApiToken.objects.get(token_hash=ApiToken.hash_token(raw))
    narrow = listening("narrow")
    McpSession.objects.filter(pk=narrow).update(token=token)
    folder_delete(folder=doomed)
    assert methods_logged(everyone) == ["notifications/resources/list_changed"]
    assert methods_logged(narrow) == []
