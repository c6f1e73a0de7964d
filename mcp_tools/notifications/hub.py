"""Each process's open GET streams, fed from the event log in the database.

Events are made by `produce`, on any worker or in the derive process (every `resources/updated`, unless
derived work runs inline), and land in the log; the worker holding a session's GET stream reads them from
there. A producer in this process wakes the hub at once; events made elsewhere are found by the hub's
poll, every `LENSRELAY_MCP_EVENTS_POLL_SECONDS`. The same poll ends streams whose session ended, whose
token was revoked or expired, or that a newer GET of the same session took over (on this worker or
another).

On the wire each event carries its number as the SSE `id`; the stream opens with a priming event (the
current number, empty data, a `retry` hint) so a client can resume with `Last-Event-ID` even before the
first notification. The same notification repeated within `DEBOUNCE_SECONDS` (a note being typed into)
is sent once, after the window, carrying the latest number: a client hears at most one
`notifications/resources/updated` per URI per window, and never misses the last change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.store import DocStore
from lensrelay.text.compact_json import compact_json
from mcp_tools.callers.sessions import LAST_SEEN_RESOLUTION, idle_timeout
from mcp_tools.models import McpSession, McpStream
from mcp_tools.notifications.events import PAGE, Replay, events_after
from mcp_tools.notifications.subscriptions import subscribed_uris

logger = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.25
PING = b": ping\n\n"
Event = tuple[int | None, dict[str, Any]]  # (seq, message); no seq for a resync hint


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def sse_frame(seq: int | None, message: dict[str, Any]) -> bytes:
    head = f"id: {seq}\n".encode() if seq is not None else b""
    return head + b"event: message\ndata: " + compact_json(message) + b"\n\n"


def coalesce_key(message: dict[str, Any]) -> str | None:
    """Notifications that supersede their predecessors (None: every one counts)."""
    method = message.get("method")
    if method == "notifications/resources/updated":
        return f"updated {(message.get('params') or {}).get('uri')}"
    if method == "notifications/resources/list_changed":
        return "list_changed"
    return None


def _batch_key(event: Event) -> str | None:
    # Resync hints (no seq) are a class of their own: merged into a later replayed event of the same key
    # they would lose their place at the front (a client resuming past the log would first hear one
    # `resources/updated`, and `list_changed` only after the events it must not trust).
    key = coalesce_key(event[1])
    return key if key is None or event[0] is not None else f"hint {key}"


def coalesce(events: list[Event]) -> list[Event]:
    """Drop notifications a later one in the batch repeats; order (and so the numbering) is kept.
    Resync hints only merge with hints."""
    last: dict[str, int] = {}
    for index, event in enumerate(events):
        key = _batch_key(event)
        if key is not None:
            last[key] = index
    return [
        event
        for index, event in enumerate(events)
        if (key := _batch_key(event)) is None or last[key] == index
    ]


def resync_hints(uris: list[str]) -> list[Event]:
    """What a client that missed dropped events must assume, before any replayed event: every list and
    subscribed resource changed."""
    hints: list[Event] = [(None, {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})]
    hints += [
        (None, {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
        for uri in uris
    ]
    return hints


@dataclass(eq=False)
class Stream:
    """One open GET stream: its session, which claim it holds, and how far it has got."""

    session_id: str
    owner: str
    cursor: int
    queue: asyncio.Queue[list[Event] | None] = field(default_factory=asyncio.Queue)
    ended: bool = False

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            self.queue.put_nowait(None)


@dataclass(frozen=True)
class _State:
    owner: str
    last_seq: int
    active: bool


def _stream_states(session_ids: list[str]) -> dict[str, _State]:
    now = timezone.now()
    cutoff = now - idle_timeout()
    rows = McpStream.objects.filter(session_id__in=session_ids).values_list(
        "session_id",
        "owner",
        "last_seq",
        "session__ended_at",
        "session__last_seen_at",
        "session__token_id",
        "session__token__revoked_at",
        "session__token__expires_at",
    )
    states = {}
    for session_id, owner, last_seq, ended_at, last_seen_at, token_id, revoked_at, expires_at in rows:
        token_ok = token_id is None or (revoked_at is None and (expires_at is None or expires_at > now))
        active = ended_at is None and last_seen_at >= cutoff and token_ok
        states[session_id] = _State(owner, last_seq, active)
    return states


def _touch_sessions(session_ids: list[str], now: datetime) -> None:
    McpSession.objects.filter(id__in=session_ids, ended_at__isnull=True).update(last_seen_at=now)


_hubs: weakref.WeakSet[StreamHub] = weakref.WeakSet()


def wake_all() -> None:
    """Tell every hub of this process to look at the log now; callable from any thread."""
    for hub in list(_hubs):
        hub.wake_threadsafe()


class StreamHub:
    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.streams: dict[str, Stream] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._touched_at = 0.0
        _hubs.add(self)

    # -- streams ---------------------------------------------------------------------------------------

    def open(self, *, session_id: str, owner: str, cursor: int) -> Stream:
        previous = self.streams.get(session_id)
        if previous is not None:
            previous.end()  # a newer GET of the same session took over
        stream = Stream(session_id=session_id, owner=owner, cursor=cursor)
        self.streams[session_id] = stream
        if self._task is None or self._task.done():
            self._task = self.store.spawn(self._supervise())
        self.wake()  # replay what the stream missed, now
        return stream

    def close(self, stream: Stream) -> None:
        stream.ended = True
        if self.streams.get(stream.session_id) is stream:
            del self.streams[stream.session_id]

    def wake(self) -> None:
        self._wake.set()

    def wake_threadsafe(self) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody listens here any more
            self.store.loop.call_soon_threadsafe(self._wake.set)

    # -- the poll --------------------------------------------------------------------------------------

    async def _supervise(self) -> None:
        while self.streams:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._wake.wait(), timeout=_setting("LENSRELAY_MCP_EVENTS_POLL_SECONDS", 0.5)
                )
            self._wake.clear()
            with failures_logged(logger, "MCP notification streams"):
                await self.tick()

    async def tick(self) -> None:
        """Check every open stream against the database once, and feed it what is new."""
        streams = [stream for stream in self.streams.values() if not stream.ended]
        if not streams:
            return
        states = await self.store.db(_stream_states, [stream.session_id for stream in streams])
        behind: dict[str, Stream] = {}
        for stream in streams:
            state = states.get(stream.session_id)
            if state is None or not state.active or state.owner != stream.owner:
                stream.end()
            elif state.last_seq > stream.cursor:
                behind[stream.session_id] = stream
        if behind:
            cursors = {session_id: stream.cursor for session_id, stream in behind.items()}
            replays = await self.store.db(events_after, cursors=cursors)
            for session_id, stream in behind.items():
                await self._feed(stream, replays.get(session_id))
            if sum(len(replay.events) for replay in replays.values()) >= PAGE:
                self.wake()  # a full page (shared by the streams behind): come back at once for the rest
        now = time.monotonic()
        if now - self._touched_at >= LAST_SEEN_RESOLUTION.total_seconds():
            # A session whose client only listens is in use: it must not idle out.
            self._touched_at = now
            await self.store.db(_touch_sessions, [stream.session_id for stream in streams], timezone.now())

    async def _feed(self, stream: Stream, replay: Replay | None) -> None:
        if replay is None or not replay.events or stream.ended:
            return
        batch: list[Event] = []
        if replay.gap:
            batch += resync_hints(await self.store.db(subscribed_uris, session_id=stream.session_id))
        batch += [(seq, message) for seq, message in replay.events]
        stream.cursor = replay.events[-1][0]
        stream.queue.put_nowait(batch)


def stream_hub(store: DocStore) -> StreamHub:
    return store.attached(StreamHub)


def _hold_back(batch: list[Event], sent_at: dict[str, float], now: float) -> float:
    """How long until no notification in the batch repeats one sent within DEBOUNCE_SECONDS."""
    wait = 0.0
    for _, message in batch:
        key = coalesce_key(message)
        if key is not None and key in sent_at:
            wait = max(wait, sent_at[key] + DEBOUNCE_SECONDS - now)
    return wait


class StreamBody:
    """The body of one GET stream's response. Django calls `close()` when the response is over (maybe
    from a worker thread): the stream then leaves the hub."""

    def __init__(
        self,
        hub: StreamHub,
        stream: Stream,
        *,
        retry_ms: int,
        first: Sequence[dict[str, Any]] = (),
        shape: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
        ended: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``first``: messages sent before any event; ``shape``: each event's message as sent (None: not
        sent); ``ended``: awaited once the stream is over (a `subscriptions/listen` stream's clean-up)."""
        self.hub = hub
        self.stream = stream
        self.retry_ms = retry_ms
        self.first = first
        self.shape = shape
        self.ended = ended
        self._loop = hub.store.loop

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._frames()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self.hub.close, self.stream)

    async def _frames(self) -> AsyncIterator[bytes]:
        stream = self.stream
        ping = _setting("LENSRELAY_MCP_STREAM_PING_SECONDS", 15.0)
        longest = _setting("LENSRELAY_MCP_STREAM_MAX_SECONDS", 0.0)
        deadline = time.monotonic() + longest if longest > 0 else None
        sent_at: dict[str, float] = {}
        try:
            yield f"id: {stream.cursor}\nretry: {self.retry_ms}\nevent: message\ndata: \n\n".encode()
            for message in self.first:
                yield sse_frame(None, message)
            while True:
                timeout = ping
                if deadline is not None:
                    timeout = min(timeout, deadline - time.monotonic())
                    if timeout <= 0:
                        return  # the client resumes with Last-Event-ID after `retry`
                try:
                    batch = await asyncio.wait_for(stream.queue.get(), timeout=timeout)
                except TimeoutError:
                    if deadline is None or time.monotonic() < deadline:
                        yield PING
                    continue
                if batch is None:
                    return
                batch, finished = await self._settle(batch, sent_at)
                now = time.monotonic()
                for seq, message in batch:
                    key = coalesce_key(message)
                    if key is not None:
                        sent_at[key] = now
                    shaped = message if self.shape is None else self.shape(message)
                    if shaped is not None:
                        yield sse_frame(seq, shaped)
                if finished:
                    return
        finally:
            self.hub.close(stream)
            if self.ended is not None:
                self.hub.store.spawn(self.ended())

    async def _settle(self, batch: list[Event], sent_at: dict[str, float]) -> tuple[list[Event], bool]:
        """Hold a batch back while it repeats a notification sent less than DEBOUNCE_SECONDS ago,
        gathering what arrives meanwhile; then coalesce it. Returns the batch and whether the stream ended."""
        finished = False
        while True:
            finished = self._drain_into(batch) or finished
            batch = coalesce(batch)
            wait = _hold_back(batch, sent_at, time.monotonic())
            if wait <= 0 or finished:
                return batch, finished
            await asyncio.sleep(wait)

    def _drain_into(self, batch: list[Event]) -> bool:
        while not self.stream.queue.empty():
            more = self.stream.queue.get_nowait()
            if more is None:
                return True
            batch += more
        return False
