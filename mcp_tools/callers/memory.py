"""Who is calling /mcp, answered from this process's memory while nothing about credentials changed.

Tokens (raw API token or OAuth access token -> Access), sessions (id -> row) and the read marks this
process wrote are kept per process. Every request first reads one row, `CredentialGeneration`, which goes
up in the same transaction as any change to a token (revoked, narrowed, widened, deleted), its folders, an
OAuth access token (revoked, refreshed away), or a session's end or
settings, whichever process makes it (signals below). A request that finds a new value drops everything
kept here and reads the database afresh, so a revocation committed anywhere refuses the very next
request on every worker: there is no time window, only the cost of one small query instead of one per
token, session and read mark. Expiry by the clock is checked from the kept `expires_at` on every request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.utils import timezone
from oauth2_provider.models import AccessToken

from lensrelay.access.auth import LAST_USED_RESOLUTION, Access, is_api_token, oauth_token_access, token_access
from lensrelay.models import ApiToken
from mcp_tools.callers import trips
from mcp_tools.models import CredentialGeneration, McpSession


@dataclass
class _Token:
    access: Access
    expires_at: datetime | None
    last_used_at: datetime | None


@dataclass
class _Memory:
    generation: int | None = None
    tokens: dict[str, _Token | None] = field(default_factory=dict)
    sessions: dict[str, McpSession] = field(default_factory=dict)
    marks: dict[tuple[str, str], datetime] = field(default_factory=dict)

    def clear(self, generation: int | None) -> None:
        self.generation = generation
        self.tokens, self.sessions, self.marks = {}, {}, {}


_memory = _Memory()
MAX_KEPT = 10_000  # per kind; past it the memory starts afresh rather than grow without bound


def generation_bump() -> None:
    """Tell every worker that credentials changed; runs inside the caller's transaction."""
    _memory.clear(None)  # this process forgets at once, whatever the database says next
    with transaction.atomic():
        if not CredentialGeneration.objects.filter(pk=1).update(value=F("value") + 1):
            CredentialGeneration.objects.get_or_create(pk=1, defaults={"value": 1})


async def refresh() -> None:
    """Once per request: forget everything kept if credentials changed anywhere since."""
    # Read on Django's one sync thread (one connection, no thread per request), together with whatever
    # other requests ask for meanwhile: see `mcp_tools.callers.trips`.
    generation = await trips.generation()
    if generation != _memory.generation:
        _memory.clear(generation)
    for kept in (_memory.tokens, _memory.sessions, _memory.marks):
        if len(kept) > MAX_KEPT:
            kept.clear()


# ----------------------------------------------------------------------------------------------- tokens


def _load_token(raw: str, token_hash: str) -> _Token | None:
    if not is_api_token(raw):
        found = oauth_token_access(raw, surface="mcp")
        return None if found is None else _Token(found.access, found.expires_at, found.last_used_at)
    token = ApiToken.objects.filter(token_hash=token_hash).prefetch_related("folders").first()
    if token is None:
        return None
    access = token_access(token, frozenset(f.pk for f in token.folders.all()))
    return None if access is None else _Token(access, token.expires_at, token.last_used_at)


def _touch_token(token_id: int, now: datetime) -> None:
    ApiToken.objects.filter(pk=token_id).update(last_used_at=now)


async def token_access_now(raw: str) -> Access | None:
    """The access a raw bearer token grants now (after `refresh()` in this request)."""
    raw = raw.strip()
    token_hash = ApiToken.hash_token(raw)
    if token_hash not in _memory.tokens:
        generation = _memory.generation
        loaded = await sync_to_async(_load_token)(raw, token_hash)
        if generation == _memory.generation:  # not cleared meanwhile by a newer request
            _memory.tokens[token_hash] = loaded
    kept = _memory.tokens.get(token_hash)
    if kept is None:
        return None
    now = timezone.now()
    if kept.expires_at is not None and now >= kept.expires_at:
        return None
    if kept.last_used_at is None or now - kept.last_used_at > LAST_USED_RESOLUTION:
        kept.last_used_at = now
        assert kept.access.token_id is not None
        await sync_to_async(_touch_token)(kept.access.token_id, now)
    return kept.access


# --------------------------------------------------------------------------------------------- sessions


def _load_session(session_id: str) -> McpSession | None:
    return McpSession.objects.filter(id=session_id).first()


async def session_row(session_id: str) -> McpSession | None:
    """The session's row as of this request's generation (None if unknown)."""
    kept = _memory.sessions.get(session_id)
    if kept is None:
        generation = _memory.generation
        kept = await sync_to_async(_load_session)(session_id)
        if kept is not None and generation == _memory.generation:
            _memory.sessions[session_id] = kept
    return kept


# ------------------------------------------------------------------------------------------- read marks


def mark_written(session_key: str, doc_id: str) -> datetime | None:
    """When this process last wrote the mark, if it did so under the current generation."""
    return _memory.marks.get((session_key, doc_id))


def mark_remember(session_key: str, doc_id: str, read_at: datetime) -> None:
    _memory.marks[(session_key, doc_id)] = read_at


# ------------------------------------------------------------------------------------------ the signals


def _bump_on_change(sender: Any, **kwargs: Any) -> None:
    if kwargs.get("raw"):
        return  # fixtures being loaded
    generation_bump()


def _bump_on_oauth_token(sender: Any, *, created: bool = False, **kwargs: Any) -> None:
    # A new token changes nothing kept (it is looked up when first seen); a changed one might (expiry).
    if not created and not kwargs.get("raw"):
        generation_bump()


def _bump_on_folders(sender: Any, *, action: str, **kwargs: Any) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        generation_bump()


def connect_credential_signals() -> None:
    uid = "mcp_tools.callers.memory"
    post_save.connect(_bump_on_change, sender=ApiToken, dispatch_uid=f"{uid}.token_saved")
    post_delete.connect(_bump_on_change, sender=ApiToken, dispatch_uid=f"{uid}.token_deleted")
    m2m_changed.connect(_bump_on_folders, sender=ApiToken.folders.through, dispatch_uid=f"{uid}.folders")
    # OAuth access tokens: one revoked (deleted) or rotated away must stop working at once.
    post_delete.connect(_bump_on_change, sender=AccessToken, dispatch_uid=f"{uid}.oauth_token_deleted")
    post_save.connect(_bump_on_oauth_token, sender=AccessToken, dispatch_uid=f"{uid}.oauth_token_saved")
    # An OAuth grant never acts above its person's rights today: a person changed (staff status, active,
    # permissions) is looked up afresh. Rare (sign-ins included), so forgetting everything kept is cheap.
    user_model = get_user_model()
    post_save.connect(_bump_on_change, sender=user_model, dispatch_uid=f"{uid}.user_saved")
    m2m_changed.connect(
        _bump_on_folders, sender=user_model.user_permissions.through, dispatch_uid=f"{uid}.user_permissions"
    )
    m2m_changed.connect(_bump_on_folders, sender=user_model.groups.through, dispatch_uid=f"{uid}.user_groups")
