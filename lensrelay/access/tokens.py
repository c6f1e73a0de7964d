"""API token services: the raw token exists only in what `token_create` returns.

Every change that takes rights away (revoking, narrowing the folders, lowering the role, moving the
expiry closer) sends `token_narrowed` once committed, so what the token opened elsewhere ends: MCP
sessions (mcp_tools) are ended at once. Open sockets need no signal: they re-check their token every
`LENSRELAY_POLL_SECONDS` (lensrelay/access/liveaccess.py), on every worker.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone
from oauth2_provider.models import AccessToken, RefreshToken

from lensrelay.access.actor_names import token_name
from lensrelay.models import ApiToken, Folder

# Sent with `token_id` after a change that took rights away from the token.
token_narrowed = Signal()

ROLE_RANK = {ApiToken.Role.VIEW: 0, ApiToken.Role.SUGGEST: 1, ApiToken.Role.EDIT: 2, ApiToken.Role.ADMIN: 3}


def _announce_narrowed(token_id: int) -> None:
    transaction.on_commit(lambda: token_narrowed.send(sender=ApiToken, token_id=token_id))


def folders_narrowed(before: Iterable[int], after: Iterable[int]) -> bool:
    """Whether a token loses a folder going from `before` to `after` (no folders means every folder)."""
    old, new = set(before), set(after)
    if not new:
        return False
    return not old or not old <= new


_DURATION_UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


def parse_lifetime(spec: str) -> timedelta:
    """`30d`, `12h`, `45m` or `90s` as a duration; ValueError saying the accepted forms otherwise."""
    text = spec.strip().lower()
    number, unit = text[:-1], text[-1:]
    # ASCII digits only: str.isdigit() takes "٣" and int() reads it as 3.
    if unit not in _DURATION_UNITS or not number.isascii() or not number.isdigit() or int(number) <= 0:
        raise ValueError(
            f"--expires-in must be a positive number with d, h, m or s (30d, 12h); got {spec!r}."
        )
    return timedelta(**{_DURATION_UNITS[unit]: int(number)})


def token_create(
    *,
    name: str,
    role: str,
    folders: Iterable[Folder] = (),
    expires_days: int | None = None,
    expires_in: timedelta | None = None,
) -> tuple[ApiToken, str]:
    if role not in ApiToken.Role.values:
        raise ValueError(f"Unknown role {role!r}; choose one of {', '.join(ApiToken.Role.values)}.")
    if expires_days is not None and expires_days <= 0:
        raise ValueError("--expires-days must be a positive number of days.")
    if expires_days is not None and expires_in is not None:
        raise ValueError("Give --expires-days or --expires-in, not both.")
    if expires_days is not None:
        expires_in = timedelta(days=expires_days)
    name = token_name(name=name)
    raw = ApiToken.generate_raw()
    token = ApiToken(name=name, role=role)
    token.set_raw(raw)
    if expires_in is not None:
        token.expires_at = timezone.now() + expires_in
    with transaction.atomic():
        token.save()
        token.folders.set(list(folders))
    return token, raw


def oauth_tokens_end(*, user_id: int, application_id: int) -> None:
    """Delete a client's OAuth tokens for this person (a revoked grant leaves nothing to refresh)."""
    RefreshToken.objects.filter(user_id=user_id, application_id=application_id, revoked__isnull=True).update(
        revoked=timezone.now()
    )
    AccessToken.objects.filter(user_id=user_id, application_id=application_id).delete()


def token_revoke(*, token: ApiToken) -> None:
    """Revoke a token or an OAuth grant (whose client's OAuth tokens are deleted with it)."""
    if token.revoked_at is None:
        with transaction.atomic():
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            if token.user_id is not None and token.oauth_application_id is not None:
                oauth_tokens_end(user_id=token.user_id, application_id=token.oauth_application_id)
            _announce_narrowed(token.pk)


def token_update(*, token: ApiToken, name: str, role: str, expires_at: datetime | None) -> None:
    """Change a token's name, role and expiry (its folders: `token_set_folders`)."""
    if role not in ApiToken.Role.values:
        raise ValueError(f"Unknown role {role!r}; choose one of {', '.join(ApiToken.Role.values)}.")
    with transaction.atomic():
        before = ApiToken.objects.select_for_update().get(pk=token.pk)
        # A name kept as it was stays, even one from before names were kept apart.
        if name != before.name:
            name = token_name(name=name, token_id=token.pk)
        token.name, token.role, token.expires_at = name, role, expires_at
        token.save(update_fields=["name", "role", "expires_at"])
        sooner = expires_at is not None and (before.expires_at is None or expires_at < before.expires_at)
        if sooner or ROLE_RANK[ApiToken.Role(role)] < ROLE_RANK[ApiToken.Role(before.role)]:
            _announce_narrowed(token.pk)


def token_set_folders(*, token: ApiToken, folders: Iterable[Folder]) -> bool:
    """Limit the token to these folders (none: every folder); returns whether it lost any."""
    chosen = list(folders)
    with transaction.atomic():
        # Lock the token's row: two admins changing its folders at once each see the other's result.
        list(ApiToken.objects.select_for_update().filter(pk=token.pk).values_list("pk", flat=True))
        before = list(token.folders.values_list("id", flat=True))
        token.folders.set(chosen)
        narrowed = folders_narrowed(before, (f.pk for f in chosen))
        if narrowed:
            _announce_narrowed(token.pk)
    return narrowed
