"""OAuth authorization codes after their first use: a replay revokes what the code issued, and a failed
PKCE check burns the code.

django-oauth-toolkit deletes a code's `Grant` row when the code is exchanged, so a second exchange only
gets invalid_grant while the first tokens stay valid. RFC 6749 §4.1.2 (and the OAuth 2.1 draft): the
server "SHOULD revoke (when possible) all tokens previously issued based on that authorization code" —
a replay means the code leaked, or that two parties hold it. So each exchanged code is recorded
(`SpentAuthorizationCode`: the code's SHA-256, never the code) with the access token it issued, the family
of its refresh token (which covers every token refreshed from it later) and the grant it acted under; a
replay revokes all three (the grant's revocation ends its open MCP sessions and GET streams on every
worker, as revoking it in the admin does). Two exchanges racing for one code both issue tokens before
either deletes the row; the one whose delete finds nothing revokes both sets.

PKCE (RFC 7636): oauthlib compares the verifier only after `validate_code`, and a wrong verifier leaves
the code usable for another guess within its lifetime. `pkce_verified` is checked first and the code is
deleted when it fails.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from oauth2_provider.models import (
    AccessToken,
    Grant,
    RefreshToken,
    refresh_token_expire_timedelta,
    revoke_access_token,
)
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749.grant_types.authorization_code import code_challenge_method_s256

from lensrelay.access.tokens import token_revoke
from lensrelay.models import ApiToken, SpentAuthorizationCode

logger = logging.getLogger(__name__)


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Issued:
    """What one exchange of a code issued."""

    access_token_checksum: str = ""
    token_family: uuid.UUID | None = None


def pkce_verified(*, grant: Grant, verifier: str | None) -> bool:
    """Whether `verifier` answers the code's S256 challenge (in constant time). A code without a challenge
    is left to oauthlib, which refuses it (PKCE is required)."""
    if not grant.code_challenge:
        return True
    if grant.code_challenge_method != "S256" or not verifier:
        return False
    return bool(code_challenge_method_s256(verifier, grant.code_challenge))


def code_burn(*, grant: Grant) -> None:
    """A failed verification ends the code: the right verifier afterwards gets invalid_grant too."""
    Grant.objects.filter(pk=grant.pk).delete()
    logger.warning("OAuth code of client %s burnt: its PKCE verification failed", grant.application.client_id)


def _active_grant(*, user_id: int | None, application_id: int) -> ApiToken | None:
    # The grant the tokens act under (auth.oauth_token_access picks it the same way).
    if user_id is None:
        return None
    return (
        ApiToken.objects.filter(user_id=user_id, oauth_application_id=application_id, revoked_at__isnull=True)
        .order_by("-created")
        .first()
    )


def code_spend(*, code: str, application: Any, user_id: int | None, issued: Issued) -> bool:
    """Delete the code's row and record what its exchange issued, at once (so a concurrent exchange sees
    either the row or the record). False: the row was already gone, a concurrent exchange spent it; then
    what this exchange issued and what the other one did are revoked."""
    with transaction.atomic():
        deleted, _ = Grant.objects.filter(code=code, application=application).delete()
        if deleted:
            SpentAuthorizationCode.objects.create(
                code_hash=code_hash(code),
                application=application,
                access_token_checksum=issued.access_token_checksum,
                token_family=issued.token_family,
                grant=_active_grant(user_id=user_id, application_id=application.pk),
            )
    if not deleted:
        _revoke(application=application, issued=[issued])
        code_replay_revoke(code=code, application=application)
        return False
    spent_codes_prune()
    return True


def code_replay_revoke(*, code: str, application: Any) -> bool:
    """Revoke what an already exchanged `code` issued (False: it was never exchanged here, or its record
    was pruned because nothing it issued can still be alive)."""
    spent = list(SpentAuthorizationCode.objects.filter(code_hash=code_hash(code), application=application))
    if not spent:
        return False
    issued = [Issued(s.access_token_checksum, s.token_family) for s in spent]
    _revoke(application=application, issued=issued)
    for record in spent:
        if record.grant is not None:
            token_revoke(token=record.grant)
    logger.warning(
        "OAuth code of client %s used again: revoked the %d exchange(s) it had issued and their grant",
        application.client_id,
        len(spent),
    )
    return True


def _revoke(*, application: Any, issued: list[Issued]) -> None:
    for one in issued:
        if one.token_family is not None:
            RefreshToken.revoke_family(one.token_family)
        if one.access_token_checksum:
            for token in AccessToken.objects.filter(
                token_checksum=one.access_token_checksum, application=application
            ):
                revoke_access_token(token)


def spent_codes_prune(*, now: datetime | None = None) -> int:
    """Forget spent codes once nothing they issued can be alive: the access token has expired and no
    refresh token of the family can still be used (unrevoked, its access token less than the refresh
    lifetime past expiry, as django-oauth-toolkit's validation counts it)."""
    now = now or timezone.now()
    live = RefreshToken.objects.filter(
        revoked__isnull=True, token_family__isnull=False, access_token__isnull=False
    )
    lifetime = refresh_token_expire_timedelta()  # None: refresh tokens never age out
    if lifetime is not None:
        live = live.filter(access_token__expires__gt=now - lifetime)
    live_families = live.values("token_family")
    access_lifetime = timedelta(seconds=oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS)
    deleted, _ = (
        SpentAuthorizationCode.objects.filter(spent_at__lt=now - access_lifetime)
        .filter(Q(token_family__isnull=True) | ~Q(token_family__in=live_families))
        .delete()
    )
    return int(deleted)
