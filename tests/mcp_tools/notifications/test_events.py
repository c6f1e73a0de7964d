"""The per-session event log: numbering, only listening sessions, replay after a cursor, bounded size."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from mcp_tools.models import McpEvent, McpSession, McpStream
from mcp_tools.notifications import events
from mcp_tools.notifications.hub import coalesce, resync_hints

pytestmark = pytest.mark.django_db(transaction=True)


def session(name: str, *, listening: bool = True) -> str:
    now = timezone.now()
    row = McpSession.objects.create(id=name, protocol_version="2025-11-25", created_at=now, last_seen_at=now)
    if listening:
        events.stream_claim(session_id=row.id)
    return row.id


def note(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": n}}


def test_events_are_numbered_per_session_and_only_for_listening_sessions() -> None:
    a, b, quiet = session("a"), session("b"), session("quiet", listening=False)
    assert events.events_append(session_ids=[a, b, quiet], message=note(1)) == {"a": 1, "b": 1}
    assert events.events_append(session_ids=[a], message=note(2)) == {"a": 2}
    assert McpEvent.objects.filter(session_id=quiet).count() == 0
    replays = events.events_after(cursors={a: 0, b: 1})
    assert [(seq, m["params"]["data"]) for seq, m in replays[a].events] == [(1, 1), (2, 2)]
    assert replays[b].events == [] and not replays[a].gap


def test_a_new_stream_takes_over_and_keeps_the_numbering() -> None:
    a = session("a")
    events.events_append(session_ids=[a], message=note(1))
    first = McpStream.objects.get(pk=a).owner
    claim = events.stream_claim(session_id=a)
    assert claim.owner != first and claim.last_seq == 1
    assert events.events_append(session_ids=[a], message=note(2)) == {"a": 2}


def test_the_log_is_bounded_and_a_replay_past_its_start_reports_the_gap(settings: Any) -> None:
    settings.LENSRELAY_MCP_EVENT_LOG_SIZE = 10
    a = session("a")
    for n in range(1, 65):
        events.events_append(session_ids=[a], message=note(n))
    kept = McpEvent.objects.filter(session_id=a).count()
    assert kept < 64 and kept <= 10 + events.PRUNE_EVERY
    replay = events.events_after(cursors={a: 3})[a]
    assert replay.gap and replay.events[-1][0] == 64
    recent = events.events_after(cursors={a: 60})[a]
    assert not recent.gap and [seq for seq, _ in recent.events] == [61, 62, 63, 64]


def test_only_the_last_log_size_events_are_replayed_whatever_pruning_left(settings: Any) -> None:
    settings.LENSRELAY_MCP_EVENT_LOG_SIZE = 10
    a = session("a")
    for n in range(1, 16):  # fewer than PRUNE_EVERY: nothing pruned yet
        events.events_append(session_ids=[a], message=note(n))
    assert McpEvent.objects.filter(session_id=a).count() == 15
    replay = events.events_after(cursors={a: 0})[a]
    assert replay.gap and [seq for seq, _ in replay.events] == list(range(6, 16))
    edge = events.events_after(cursors={a: 5})[a]
    assert not edge.gap and [seq for seq, _ in edge.events] == list(range(6, 16))


def test_a_page_is_shared_by_the_sessions_behind_and_resumes_without_a_gap() -> None:
    a, b = session("a"), session("b")
    for n in range(1, 4):
        events.events_append(session_ids=[a, b], message=note(n))
    first = events.events_after(cursors={a: 0, b: 0}, limit=4)
    assert [seq for seq, _ in first[a].events] == [1, 2, 3] and [seq for seq, _ in first[b].events] == [1]
    rest = events.events_after(cursors={b: 1}, limit=4)[b]
    assert [seq for seq, _ in rest.events] == [2, 3] and not rest.gap


def test_ending_a_session_deletes_its_log_with_it() -> None:
    a = session("a")
    events.events_append(session_ids=[a], message=note(1))
    McpSession.objects.filter(pk=a).delete()
    assert not McpEvent.objects.exists() and not McpStream.objects.exists()


def updated(uri: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}


def test_coalescing_keeps_the_last_of_each_repeated_notification_in_order() -> None:
    listed = {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}
    batch = [(1, updated("x")), (2, listed), (3, note(1)), (4, updated("x")), (5, note(2)), (6, listed)]
    assert [seq for seq, _ in coalesce(list(batch))] == [3, 4, 5, 6]


def test_resync_hints_stay_first_and_never_merge_into_replayed_events() -> None:
    listed = {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}
    batch = [*resync_hints(["x"]), (38, updated("x")), (39, listed), (40, updated("x"))]
    kept = coalesce(batch)
    assert [seq for seq, _ in kept] == [None, None, 39, 40]
    assert [m["method"] for _, m in kept[:2]] == [
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ]
    # Hints repeated by a second gap in the same batch merge with each other only.
    twice = coalesce([*resync_hints(["x"]), (7, updated("x")), *resync_hints(["x"])])
    assert [seq for seq, _ in twice] == [7, None, None]


def test_resync_hints_name_every_subscribed_uri() -> None:
    hints = resync_hints(["lens://A/x.md"])
    assert [m["method"] for _, m in hints] == [
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ]
    assert all(seq is None for seq, _ in hints)
