"""Authorization codes after their first use, through the token endpoint as a client calls it: a replayed
code revokes what it issued (RFC 6749 §4.1.2), also when two exchanges race for it; a failed PKCE check
burns the code; spent codes are kept as hashes and forgotten once nothing they issued can be alive."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from lensrelay.access import oauth_codes
from lensrelay.access.auth import oauth_token_access
from lensrelay.access.oauth_server import LensRelayValidator
from lensrelay.models import ApiToken, SpentAuthorizationCode
from tests.lensrelay.access.test_oauth_server import (
    access_tokens,
    alice,
    code_from,
    consent,
    exchange,
    refresh,
    register,
)

__all__ = ["alice"]

pytestmark = pytest.mark.django_db


def alive(body: dict[str, Any]) -> bool:
    return oauth_token_access(body["access_token"], surface="mcp") is not None


def grant_of(user: User) -> ApiToken:
    return ApiToken.objects.get(user=user, oauth_application__isnull=False)


def test_a_replayed_code_revokes_the_tokens_it_issued_and_their_grant(alice: User) -> None:
    client_id = register()
    code = code_from(consent(alice, client_id))
    first = exchange(client_id, code)
    assert first.status_code == 200 and alive(first.json())
    replay = exchange(client_id, code)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert "access_token" not in replay.json()
    assert not alive(first.json())
    assert refresh(client_id, first.json()["refresh_token"]).status_code == 400
    assert not access_tokens().exists()
    assert grant_of(alice).revoked_at is not None  # its sessions and streams end with it


def test_a_replay_also_revokes_tokens_refreshed_from_the_code(alice: User) -> None:
    client_id = register()
    code = code_from(consent(alice, client_id))
    first = exchange(client_id, code).json()
    rotated = refresh(client_id, first["refresh_token"]).json()
    again = refresh(client_id, rotated["refresh_token"]).json()
    assert alive(again)
    assert exchange(client_id, code).json()["error"] == "invalid_grant"
    assert not alive(again)
    assert refresh(client_id, again["refresh_token"]).status_code == 400
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_a_replay_by_another_client_revokes_nothing(alice: User) -> None:
    mine, other = register(), register()
    code = code_from(consent(alice, mine))
    first = exchange(mine, code).json()
    assert exchange(other, code).json()["error"] == "invalid_grant"
    assert alive(first)  # the code is bound to its client: another client's replay is just refused


def test_a_replay_after_a_new_consent_leaves_the_new_grant_alone(alice: User) -> None:
    client_id = register()
    old = code_from(consent(alice, client_id))
    exchange(client_id, old)
    new = exchange(client_id, code_from(consent(alice, client_id))).json()
    assert exchange(client_id, old).json()["error"] == "invalid_grant"
    assert alive(new)
    assert ApiToken.objects.filter(user=alice, revoked_at__isnull=True).count() == 1


def test_two_exchanges_racing_for_one_code_are_both_revoked(alice: User, monkeypatch: Any) -> None:
    """Both pass `validate_code` and issue tokens before either deletes the code: the second exchange is
    run inside the first one's `invalidate_authorization_code`, just before its delete."""
    client_id = register()
    code = code_from(consent(alice, client_id))
    original = LensRelayValidator.invalidate_authorization_code
    inner: list[Any] = []
    raced: list[bool] = []

    def racing(self: Any, client_id_: str, code_: str, request: Any, *args: Any, **kwargs: Any) -> None:
        if not raced:
            raced.append(True)
            inner.append(exchange(client_id, code))  # the other exchange wins the delete
        original(self, client_id_, code_, request, *args, **kwargs)

    monkeypatch.setattr(LensRelayValidator, "invalidate_authorization_code", racing)
    outer = exchange(client_id, code)
    winner = inner[0]
    assert winner.status_code == 200, winner.content
    assert outer.status_code == 400 and outer.json()["error"] == "invalid_grant"
    assert outer["Content-Type"] == "application/json" and outer["Cache-Control"] == "no-store"
    assert AccessToken.objects.filter(user=alice).count() == 0  # both sets, though both were issued
    assert not alive(winner.json())
    assert refresh(client_id, winner.json()["refresh_token"]).status_code == 400


@pytest.mark.parametrize("first_verifier", ["w" * 64, ""], ids=["wrong-verifier", "no-verifier"])
def test_a_failed_pkce_check_burns_the_code(alice: User, first_verifier: str) -> None:
    client_id = register()
    code = code_from(consent(alice, client_id))
    failed = exchange(client_id, code, code_verifier=first_verifier)
    assert failed.status_code == 400
    assert failed.json()["error"] == ("invalid_grant" if first_verifier else "invalid_request")
    assert not Grant.objects.exists()
    right = exchange(client_id, code)  # the right verifier, too late
    assert right.status_code == 400 and right.json()["error"] == "invalid_grant"
    assert not access_tokens().exists()


def test_a_spent_code_is_kept_as_its_hash_with_what_it_issued(alice: User) -> None:
    client_id = register()
    code = code_from(consent(alice, client_id))
    body = exchange(client_id, code).json()
    spent = SpentAuthorizationCode.objects.get()
    stored = [str(value) for value in SpentAuthorizationCode.objects.values().get().values()]
    assert not any(code in value or body["access_token"] in value for value in stored)
    assert spent.code_hash == oauth_codes.code_hash(code)
    assert spent.access_token_checksum == AccessToken.objects.get(user=alice).token_checksum
    assert spent.token_family == RefreshToken.objects.get(user=alice).token_family
    assert spent.grant == grant_of(alice)


def test_spent_codes_are_forgotten_once_nothing_they_issued_can_be_alive(alice: User) -> None:
    client_id = register()
    live = exchange(client_id, code_from(consent(alice, client_id))).json()
    other = register()
    exchange(other, code_from(consent(alice, other)))
    later = timezone.now() + timedelta(days=1)
    # A day on, the access tokens have expired; both families can still refresh (30 days).
    assert oauth_codes.spent_codes_prune(now=later) == 0
    # `other`'s family ends (revoked, as a replay of its refresh token would); `live`'s goes on.
    for token in RefreshToken.objects.filter(application__client_id=other):
        token.revoke()
    assert oauth_codes.spent_codes_prune(now=later) == 1
    assert SpentAuthorizationCode.objects.get().application == Application.objects.get(client_id=client_id)
    # Past the refresh lifetime after its access token's expiry, nothing of it can be refreshed.
    assert oauth_codes.spent_codes_prune(now=later + timedelta(days=31)) == 1
    assert not SpentAuthorizationCode.objects.exists()
    assert live["access_token"]
