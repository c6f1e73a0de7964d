"""API token services: the raw token exists only in what `token_create` returns."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from lensrelay.models import ApiToken, Folder


def token_create(
    *, name: str, role: str, folders: Iterable[Folder] = (), expires_days: int | None = None
) -> tuple[ApiToken, str]:
    if role not in ApiToken.Role.values:
        raise ValueError(f"Unknown role {role!r}; choose one of {', '.join(ApiToken.Role.values)}.")
    if not name.strip():
        raise ValueError("A token needs a name (it is shown as the author of its suggestions).")
    if expires_days is not None and expires_days <= 0:
        raise ValueError("--expires-days must be a positive number of days.")
    raw = ApiToken.generate_raw()
    token = ApiToken(name=name.strip(), role=role)
    token.set_raw(raw)
    if expires_days is not None:
        token.expires_at = timezone.now() + timedelta(days=expires_days)
    with transaction.atomic():
        token.save()
        token.folders.set(list(folders))
    return token, raw


def token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
