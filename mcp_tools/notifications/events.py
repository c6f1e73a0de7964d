"""The per-session event log: every notification for a listening session is a numbered row.

Numbers (`seq`) count up per session from the session's `McpStream` row, which the append locks until it
commits, so a stream that has sent event n never later finds an n-1 committed behind it. A replay gives
at most the last `LENSRELAY_MCP_EVENT_LOG_SIZE` events of a session: enough for a reconnect, never
growing without bound (pruning runs every PRUNE_EVERY events, so the table may hold that many more,
never replayed). A replay that reaches back further is told so (`Replay.gap`).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Min, Q

from mcp_tools.models import McpEvent, McpStream

# Pruning costs a statement; do it every this many events of a session.
PRUNE_EVERY = 32


def log_size() -> int:
    return max(1, int(getattr(settings, "LENSRELAY_MCP_EVENT_LOG_SIZE", 500)))


def events_append(*, session_ids: Iterable[str], message: dict[str, Any]) -> dict[str, int]:
    """Log `message` for each listening session among `session_ids`; returns {session id: seq}.

    Sessions that never opened a GET stream are skipped: nobody would ever read their events.
    """
    appended: dict[str, int] = {}
    with transaction.atomic():
        for session_id in sorted(set(session_ids)):  # one lock order, so concurrent appends never deadlock
            if not McpStream.objects.filter(session_id=session_id).update(last_seq=F("last_seq") + 1):
                continue
            seq = McpStream.objects.filter(session_id=session_id).values_list("last_seq", flat=True).get()
            McpEvent.objects.create(session_id=session_id, seq=seq, message=message)
            appended[session_id] = seq
            if seq % PRUNE_EVERY == 0:
                McpEvent.objects.filter(session_id=session_id, seq__lte=seq - log_size()).delete()
    return appended


@dataclass(frozen=True)
class Claim:
    owner: str
    last_seq: int


def stream_claim(*, session_id: str) -> Claim:
    """Make a new GET stream the session's one stream (an older one, anywhere, then ends)."""
    owner = secrets.token_hex(16)
    with transaction.atomic():
        stream, created = McpStream.objects.select_for_update().get_or_create(
            session_id=session_id, defaults={"owner": owner}
        )
        if not created:
            McpStream.objects.filter(pk=session_id).update(owner=owner)
    return Claim(owner=owner, last_seq=stream.last_seq)


@dataclass(frozen=True)
class Replay:
    events: list[tuple[int, dict[str, Any]]]
    # Events after the cursor are not replayed: they are older than the last `log_size()` events.
    gap: bool


PAGE = 1000


def events_after(*, cursors: dict[str, int], limit: int = PAGE) -> dict[str, Replay]:
    """Each session's logged events after its cursor, oldest first (at most `limit` in all per call).

    Only the session's last `log_size()` events are ever replayed, whatever pruning has left (it runs every
    PRUNE_EVERY events, so the table may hold up to PRUNE_EVERY more): a resume from further back always
    reports the gap, not only when the rows happen to be gone."""
    if not cursors:
        return {}
    size = log_size()
    latest = dict(
        McpStream.objects.filter(session_id__in=list(cursors)).values_list("session_id", "last_seq")
    )
    starts = {session_id: max(seq, latest.get(session_id, seq) - size) for session_id, seq in cursors.items()}
    wanted = Q()
    for session_id, start in starts.items():
        wanted |= Q(session_id=session_id, seq__gt=start)
    rows = (
        McpEvent.objects.filter(wanted)
        .order_by("session_id", "seq")
        .values_list("session_id", "seq", "message")
    )
    found: dict[str, list[tuple[int, dict[str, Any]]]] = {session_id: [] for session_id in cursors}
    for session_id, seq, message in rows[:limit]:
        found[session_id].append((seq, message))
    replays = {}
    for session_id, events in found.items():
        start = starts[session_id]
        # Past the log's size, or rows pruned after `latest` was read (a concurrent append).
        gap = bool(events) and (start > cursors[session_id] or events[0][0] > start + 1)
        replays[session_id] = Replay(events=events, gap=gap)
    return replays


def oldest_kept(*, session_id: str) -> int | None:
    value = McpEvent.objects.filter(session_id=session_id).aggregate(m=Min("seq"))["m"]
    return None if value is None else int(value)
