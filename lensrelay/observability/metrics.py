"""Every Prometheus metric Lens Relay exports, defined once, with the helpers the code counts through.

Names follow Prometheus' conventions: the `lensrelay_` prefix, base units (seconds, rows), `_total` on
counters (prometheus_client adds it to a counter's name), `_seconds` on durations. Every label takes its
values from a fixed set (outcomes, transports, document kinds) or from names the code defines (MCP tool
names): never a document id, a path or a token, which would make a series per document.

Scaled out, each worker process writes its numbers into files of one shared directory
(`PROMETHEUS_MULTIPROC_DIR`, which `python -m lensrelay.server.serve` sets up) and a scrape of any worker
adds them up (`lensrelay.observability.scrape`). Gauges of a process count only while it lives
(`livesum`, `livemax`). Without that directory each process keeps its own numbers in memory.

The live path counts through these helpers only: no query, no await. An increment in prometheus_client is
a few microseconds (a lock taken and released around one float, in the shared-file mode a check of the
process id and a write into a memory-mapped file), and each update received, logged and sent made six:
about a twentieth of the server's CPU at a team's load (issue 36). So the per-update series are gathered
in plain numbers here (`_Gathered`) and handed to prometheus_client a second apart (`flush_live_counts`:
by the next count due, by the event-loop monitor when none comes), whenever this process is scraped, and
at exit. A scrape reads its own process's numbers exactly and other workers' at most a second old; a
worker killed outright loses at most its last second of them.

Numbers read from the database (pending suggestions, derived-work backlog) are read when scraped.
"""

from __future__ import annotations

import atexit
import math
import threading
import time
from bisect import bisect_left

from prometheus_client import Counter, Gauge, Histogram

# -- bounded label values ---------------------------------------------------------------------------------

TRANSPORTS = ("websocket", "http")
DELIVERY_KINDS = ("update", "awareness")
ROOM_KINDS = ("content", "folder", "standalone")
# tools/call outcomes: answered; a tool error the assistant reads (bad arguments, nothing found, a refusal
# of the tool itself); the caller's role may not use the tool; no such tool; the tool raised; the client
# went away mid-call.
MCP_OUTCOMES = ("ok", "error", "forbidden", "unknown_tool", "internal_error", "cancelled")
# Tool label of a call naming no known tool: what the caller sent is never a label value.
MCP_UNKNOWN_TOOL = "unknown"
# The final statuses a suggestion leaves pending for (suggestions.models.Suggestion.Status).
DECISION_OUTCOMES = ("accepted", "rejected", "stale", "superseded")

# The per-update series are handed to prometheus_client this often (see above).
FLUSH_SECONDS = 1.0

# -- buckets (seconds) ------------------------------------------------------------------------------------

FAST_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
DATABASE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# From a reviewer at the screen to one back from holiday: a minute to a month.
DECISION_BUCKETS = (
    10.0,
    60.0,
    300.0,
    900.0,
    3600.0,
    4 * 3600.0,
    86400.0,
    3 * 86400.0,
    7 * 86400.0,
    30 * 86400.0,
)

# -- live documents ---------------------------------------------------------------------------------------

OPEN_CONNECTIONS = Gauge(
    "lensrelay_open_connections",
    "WebSocket clients (y-websocket, y-sweet) connected to a document now.",
    multiprocess_mode="livesum",
)
ROOMS = Gauge(
    "lensrelay_rooms",
    "Documents held live in memory by the server processes, by kind of document.",
    ["kind"],
    multiprocess_mode="livesum",
)
UPDATES_RECEIVED = Counter(
    "lensrelay_updates_received_total",
    "Document updates received from clients and applied, by transport (rate() gives updates per second).",
    ["transport"],
)
DELIVERIES = Counter(
    "lensrelay_deliveries_total",
    "Frames sent to connected clients: merged document updates and presence (awareness) updates.",
    ["kind"],
)
PERSIST_SECONDS = Histogram(
    "lensrelay_persist_duration_seconds",
    "Time to append a batch of changes to the update log, before anyone is sent it.",
    buckets=DATABASE_BUCKETS,
)
BROADCAST_SECONDS = Histogram(
    "lensrelay_broadcast_duration_seconds",
    "Time to send a logged batch of changes to every other client of its document on this worker.",
    buckets=FAST_BUCKETS,
)
LOOP_LAG_SECONDS = Histogram(
    "lensrelay_event_loop_lag_seconds",
    "How late each worker's event loop ran a timer (sampled 20 times a second).",
    buckets=LAG_BUCKETS,
)
LOOP_LAG_LAST_SECONDS = Gauge(
    "lensrelay_event_loop_lag_last_seconds",
    "The latest event-loop lag sample, the largest among the live workers.",
    multiprocess_mode="livemax",
)

# -- assistants and review ------------------------------------------------------------------------------

MCP_TOOL_CALLS = Counter(
    "lensrelay_mcp_tool_calls_total",
    "MCP tools/call requests, by tool and outcome.",
    ["tool", "outcome"],
)
MCP_TOOL_CALL_SECONDS = Histogram(
    "lensrelay_mcp_tool_call_duration_seconds",
    "Time to answer an MCP tools/call, by tool.",
    ["tool"],
    buckets=REQUEST_BUCKETS,
)
SUGGESTIONS_CREATED = Counter(
    "lensrelay_suggestions_created_total",
    "Suggestions proposed, by kind of change.",
    ["kind"],
)
SUGGESTIONS_DECIDED = Counter(
    "lensrelay_suggestions_decided_total",
    "Suggestions that left pending, by outcome (reviewers, editors, clean-ups, superseding proposals).",
    ["outcome"],
)
SUGGESTION_DECISION_SECONDS = Histogram(
    "lensrelay_suggestion_decision_seconds",
    "Time from a suggestion's creation to its decision.",
    ["outcome"],
    buckets=DECISION_BUCKETS,
)

# Children made once, here: every known series is exported from the start (rate() needs the zero), and the
# live path skips the label look-up.
for _transport in TRANSPORTS:
    UPDATES_RECEIVED.labels(transport=_transport)
for _kind in DELIVERY_KINDS:
    DELIVERIES.labels(kind=_kind)
for _outcome in DECISION_OUTCOMES:
    SUGGESTIONS_DECIDED.labels(outcome=_outcome)
_UPDATES_WEBSOCKET = UPDATES_RECEIVED.labels(transport="websocket")
_UPDATES_HTTP = UPDATES_RECEIVED.labels(transport="http")
_DELIVERED_UPDATES = DELIVERIES.labels(kind="update")
_DELIVERED_AWARENESS = DELIVERIES.labels(kind="awareness")
_ROOMS = {kind: ROOMS.labels(kind=kind) for kind in ROOM_KINDS}


class _Observations:
    """A histogram's observations since the last hand-over: a count per bucket and their sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.bounds = (*buckets, math.inf)
        self.counts = [0] * len(self.bounds)
        self.total = 0.0

    def add(self, seconds: float) -> None:
        # The first bucket whose bound is at least the value, as Histogram.observe picks it.
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def take(self) -> _Observations:
        taken = _Observations(())
        taken.bounds, taken.counts, taken.total = self.bounds, self.counts, self.total
        self.counts, self.total = [0] * len(self.bounds), 0.0
        return taken

    def hand_to(self, histogram: Histogram) -> None:
        if not any(self.counts):
            return
        # Histogram.observe(v) in prometheus_client 0.26 (pinned in pyproject.toml) is `_sum.inc(v)` and
        # `_buckets[i].inc(1)` for that first bucket: the same, n at a time. tests/lensrelay/observability/
        # test_gathered.py checks both ways give the same exposition.
        histogram._sum.inc(self.total)
        for value, count in zip(histogram._buckets, self.counts, strict=True):
            if count:
                value.inc(count)


class _Gathered:
    """The per-update series since the last flush. Counted on the event loop's thread; the lock keeps a
    scrape's flush from a request thread exact."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.updates_websocket = 0
        self.delivered_updates = 0
        self.delivered_awareness = 0
        self.persist = _Observations(DATABASE_BUCKETS)
        self.broadcast = _Observations(FAST_BUCKETS)
        self.due_at = 0.0


_gathered = _Gathered()


def _known(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what} {value!r} is not one of {', '.join(allowed)}")
    return value


# -- the live path ------------------------------------------------------------------------------------------


def connection_opened() -> None:
    OPEN_CONNECTIONS.inc()


def connection_closed() -> None:
    OPEN_CONNECTIONS.dec()


def room_loaded(kind: str) -> None:
    (_ROOMS.get(kind) or ROOMS.labels(kind=_known(kind, ROOM_KINDS, "room kind"))).inc()


def rooms_unloaded(kind: str, count: int = 1) -> None:
    (_ROOMS.get(kind) or ROOMS.labels(kind=_known(kind, ROOM_KINDS, "room kind"))).dec(count)


def update_received_websocket() -> None:
    with _gathered.lock:
        _gathered.updates_websocket += 1
    flush_live_counts_if_due()


def update_received_http() -> None:
    _UPDATES_HTTP.inc()


def updates_delivered(count: int, seconds: float) -> None:
    """A logged batch sent to `count` clients in `seconds`."""
    with _gathered.lock:
        _gathered.delivered_updates += count
        _gathered.broadcast.add(seconds)
    flush_live_counts_if_due()


def awareness_delivered(count: int) -> None:
    with _gathered.lock:
        _gathered.delivered_awareness += count
    flush_live_counts_if_due()


def persisted(seconds: float) -> None:
    with _gathered.lock:
        _gathered.persist.add(seconds)
    flush_live_counts_if_due()


def flush_live_counts_if_due() -> None:
    """`flush_live_counts` once FLUSH_SECONDS have passed since the last."""
    if time.monotonic() >= _gathered.due_at:
        flush_live_counts()


def flush_live_counts() -> None:
    """Hand what the live path gathered to prometheus_client (a scrape of this process sees it all)."""
    with _gathered.lock:
        _gathered.due_at = time.monotonic() + FLUSH_SECONDS
        updates, _gathered.updates_websocket = _gathered.updates_websocket, 0
        delivered, _gathered.delivered_updates = _gathered.delivered_updates, 0
        awareness, _gathered.delivered_awareness = _gathered.delivered_awareness, 0
        persist = _gathered.persist.take()
        broadcast = _gathered.broadcast.take()
    if updates:
        _UPDATES_WEBSOCKET.inc(updates)
    if delivered:
        _DELIVERED_UPDATES.inc(delivered)
    if awareness:
        _DELIVERED_AWARENESS.inc(awareness)
    persist.hand_to(PERSIST_SECONDS)
    broadcast.hand_to(BROADCAST_SECONDS)


atexit.register(flush_live_counts)


def loop_lag_observe(seconds: float) -> None:
    LOOP_LAG_SECONDS.observe(seconds)
    LOOP_LAG_LAST_SECONDS.set(seconds)


# -- assistants and review ------------------------------------------------------------------------------


def mcp_tool_call_observe(*, tool: str, outcome: str, seconds: float) -> None:
    """One tools/call answered. `tool` must be a registered tool's name or MCP_UNKNOWN_TOOL."""
    MCP_TOOL_CALLS.labels(tool=tool, outcome=_known(outcome, MCP_OUTCOMES, "MCP outcome")).inc()
    MCP_TOOL_CALL_SECONDS.labels(tool=tool).observe(seconds)


def suggestion_created_observe(*, kind: str) -> None:
    SUGGESTIONS_CREATED.labels(kind=kind).inc()


def suggestion_decided_observe(*, outcome: str, seconds: float | None) -> None:
    """A suggestion left pending with `outcome`, `seconds` after it was created (None: not known)."""
    SUGGESTIONS_DECIDED.labels(outcome=_known(outcome, DECISION_OUTCOMES, "decision outcome")).inc()
    if seconds is not None:
        SUGGESTION_DECISION_SECONDS.labels(outcome=outcome).observe(max(0.0, seconds))
