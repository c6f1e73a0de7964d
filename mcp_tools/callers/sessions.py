"""Services for MCP sessions and read marks. Both live in the database, so any worker can answer any request.

A session is what `initialize` starts in the handshake protocol era; it idles out after
`LENSRELAY_MCP_SESSION_IDLE_SECONDS` without a request and ends at once on `DELETE /mcp`. A read mark
records that a caller read a document, for read-before-edit; its key is the session id, or in the stateless
era `token:{token id}:client:{client name}` (see `stateless_session_key`).
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from lensrelay.access.tokens import token_narrowed
from mcp_tools.callers import memory, trips
from mcp_tools.models import McpSession, ReadMark

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# Writing last_seen_at on every request would turn every read into a write; expiry is coarse anyway.
LAST_SEEN_RESOLUTION = timedelta(seconds=30)
PURGE_EVERY_SECONDS = 600.0
_last_purge = 0.0


def idle_timeout() -> timedelta:
    return timedelta(seconds=float(settings.LENSRELAY_MCP_SESSION_IDLE_SECONDS))


def new_session_id() -> str:
    # Visible ASCII only (the spec's rule for Mcp-Session-Id), and unguessable.
    return secrets.token_hex(24)


def stateless_session_key(*, token_id: int | None, client_name: str) -> str:
    """The read-mark key for the stateless era, where there is no session: one per token and client."""
    return f"token:{token_id if token_id is not None else 'anonymous'}:client:{client_name}"


def session_is_active(session: McpSession, *, now: datetime | None = None) -> bool:
    now = now or timezone.now()
    return session.ended_at is None and now - session.last_seen_at <= idle_timeout()


async def asession_create(
    *,
    token_id: int | None,
    protocol_version: str,
    client_info: dict[str, Any],
    client_capabilities: dict[str, Any],
) -> McpSession:
    await _apurge_now_and_then()
    now = timezone.now()
    return await McpSession.objects.acreate(
        id=new_session_id(),
        token_id=token_id,
        protocol_version=protocol_version,
        client_name=str(client_info.get("name", ""))[:200],
        client_version=str(client_info.get("version", ""))[:100],
        client_info=client_info,
        client_capabilities=client_capabilities,
        created_at=now,
        last_seen_at=now,
    )


async def asession_get(*, session_id: str, token_id: int | None) -> McpSession | None:
    """The active session with this id opened by this token, or None (unknown, ended, idle, other token).

    Marks it as seen, so an active session does not idle out.
    """
    session = await McpSession.objects.filter(id=session_id).afirst()
    return await _active_and_seen(session, token_id=token_id)


async def asession_get_kept(*, session_id: str, token_id: int | None) -> McpSession | None:
    """`asession_get` from this process's kept rows (`mcp_tools.callers.memory`), for requests that called
    `memory.refresh()` first; a row that looks idle is read again, another worker may have seen it."""
    session = await memory.session_row(session_id)
    if session is not None and not session_is_active(session):
        session = await McpSession.objects.filter(id=session_id).afirst()
    return await _active_and_seen(session, token_id=token_id)


async def _active_and_seen(session: McpSession | None, *, token_id: int | None) -> McpSession | None:
    if session is None or session.token_id != token_id:
        return None
    now = timezone.now()
    if not session_is_active(session, now=now):
        return None
    if now - session.last_seen_at > LAST_SEEN_RESOLUTION:
        session.last_seen_at = now
        await McpSession.objects.filter(pk=session.pk).aupdate(last_seen_at=now)
    return session


async def asession_end(*, session_id: str) -> bool:
    """End the session; False if it was unknown or already ended."""
    return await sync_to_async(_session_end)(session_id)


def _session_end(session_id: str) -> bool:
    with transaction.atomic():
        ended = McpSession.objects.filter(id=session_id, ended_at__isnull=True).update(
            ended_at=timezone.now()
        )
        memory.generation_bump()
    return ended > 0


def sessions_end_for_token(*, token_id: int) -> int:
    """End every session the token opened, and forget what it read, after the token lost rights: its
    next request with an old session id gets 404 (or 401 if it is revoked) and starts afresh."""
    with transaction.atomic():
        ended = McpSession.objects.filter(token_id=token_id, ended_at__isnull=True).update(
            ended_at=timezone.now()
        )
        session_ids = McpSession.objects.filter(token_id=token_id).values_list("id", flat=True)
        ReadMark.objects.filter(
            Q(session_key__in=session_ids) | Q(session_key__startswith=f"token:{token_id}:client:")
        ).delete()
        memory.generation_bump()
    return ended


def _token_narrowed(sender: Any, *, token_id: int, **kwargs: Any) -> None:
    sessions_end_for_token(token_id=token_id)


def connect_token_signals() -> None:
    token_narrowed.connect(_token_narrowed, dispatch_uid="mcp_tools.callers.sessions.token_narrowed")


async def asession_set_log_level(*, session_id: str, level: str) -> None:
    if level not in LOG_LEVELS:
        raise ValueError(f"Unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}.")
    await sync_to_async(_session_update)(session_id, log_level=level)


def _session_update(session_id: str, **fields: Any) -> None:
    """Change a session's settings; kept copies of the row are dropped on every worker."""
    with transaction.atomic():
        McpSession.objects.filter(id=session_id).update(**fields)
        memory.generation_bump()


# ---------------------------------------------------------------------------------------- read marks


def record_read(*, session_key: str, doc_id: str, now: datetime | None = None) -> None:
    """Remember that the caller behind `session_key` has read `doc_id` now (one upsert statement)."""
    ReadMark.objects.bulk_create(
        [ReadMark(session_key=session_key, doc_id=doc_id, read_at=now or timezone.now())],
        update_conflicts=True,
        unique_fields=["session_key", "doc_id"],
        update_fields=["read_at"],
    )


def has_read(*, session_key: str, doc_id: str) -> bool:
    return last_read_at(session_key=session_key, doc_id=doc_id) is not None


def last_read_at(*, session_key: str, doc_id: str) -> datetime | None:
    """When the caller last read the document (None if never, or if the mark has expired)."""
    read_at = (
        ReadMark.objects.filter(session_key=session_key, doc_id=doc_id)
        .values_list("read_at", flat=True)
        .first()
    )
    if read_at is None or timezone.now() - read_at > idle_timeout():
        return None
    return read_at


arecord_read = sync_to_async(record_read)


async def arecord_read_coarse(*, session_key: str, doc_id: str) -> None:
    """`record_read`, skipped while this process wrote the same mark less than `LAST_SEEN_RESOLUTION`
    ago and nothing about credentials changed since (marks are only deleted with such a change or once
    idle): a mark's time is as coarse as a session's last-seen time, and every worker still finds it."""
    now = timezone.now()
    written = memory.mark_written(session_key, doc_id)
    if written is not None and now - written <= LAST_SEEN_RESOLUTION:
        return
    await trips.write_mark(session_key=session_key, doc_id=doc_id, read_at=now)
    memory.mark_remember(session_key, doc_id, now)


ahas_read = sync_to_async(has_read)


alast_read_at = sync_to_async(last_read_at)


# ---------------------------------------------------------------------------------------- housekeeping


def purge_stale(*, now: datetime | None = None) -> int:
    """Delete ended and idle sessions and expired read marks; returns how many rows went."""
    now = now or timezone.now()
    cutoff = now - idle_timeout()
    sessions, _ = McpSession.objects.filter(Q(ended_at__isnull=False) | Q(last_seen_at__lt=cutoff)).delete()
    marks, _ = ReadMark.objects.filter(read_at__lt=cutoff).delete()
    return sessions + marks


async def _apurge_now_and_then() -> None:
    global _last_purge
    if time.monotonic() - _last_purge < PURGE_EVERY_SECONDS and _last_purge:
        return
    _last_purge = time.monotonic()
    await sync_to_async(purge_stale)()
