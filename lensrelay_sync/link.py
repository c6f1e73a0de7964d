"""One Yjs document kept in sync with the server over one y-websocket connection, reconnecting until closed.

The protocol (y-websocket, `lensrelay.protocol.wire` frames): on open each side sends sync step 1 (its state
vector) and answers the other's with step 2 (what it lacks); then updates flow both ways. Local changes made
while the socket is down stay in the Doc and reach the server in the step 2 of the next connection, so an
offline edit is merged on reconnect like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from urllib.parse import quote

import websockets
from pycrdt import Doc, Text
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from lensrelay.protocol import wire
from lensrelay_sync.textmerge import Op

logger = logging.getLogger("lensrelay_sync")

CONTENTS = "contents"
# y-websocket's reconnect schedule: 100 ms doubling, capped at 2.5 s.
_BACKOFF_FIRST, _BACKOFF_MAX = 0.1, 2.5
# Keepalive pings find a connection that died without a close. Only the folder document's socket pings
# (websockets' default, every 20 s): a folder of 10,000 notes holds 10,000 sockets, whose pings came in bursts
# (they all opened together) that stalled the client for a second; when the folder's socket is found dead,
# the mirror reconnects every note's (`reconnect`).


# A Yjs (v1) update with no items and no deletions.
EMPTY_UPDATE = b"\x00\x00"


class Closed(Exception):
    """The server closed the document for good (a 44xx code: token refused, document unknown or purged)."""


def apply_ops(text: Text, current: str, ops: Sequence[Op]) -> None:
    """Apply ``ops`` (ascending, in code points of ``current``, the text's content) to a pycrdt Text.

    pycrdt 0.14 counts UTF-8 bytes: each position is converted from ``current``; applying from the end keeps
    every earlier position valid.
    """
    for op in reversed(ops):
        at = len(current[: op.pos].encode())
        if op.delete:
            end = len(current[: op.pos + op.delete].encode())
            del text[at:end]
        if op.insert:
            text.insert(at, op.insert)


class DocLink:
    """A Doc and the socket that keeps it in sync. ``on_change`` is called after every remote change."""

    def __init__(
        self,
        *,
        ws_base: str,
        doc_id: str,
        token: str,
        on_change: Callable[[], None],
        label: str,
        unknown_grace: float = 0.0,
        ping: bool = False,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.doc: Doc = Doc()
        self.doc_id = doc_id
        self.label = label
        self.synced = asyncio.Event()
        self.denied: str | None = None
        self.closed: Closed | None = None
        self._url = f"{ws_base}/d/{doc_id}/ws/{doc_id}?token={quote(token, safe='')}"
        self._on_change = on_change
        self._on_lost = on_lost
        self._ping = ping
        self._outbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._answers: list[asyncio.Future[None]] = []  # waiting for the server's next sync step 2
        self._socket: websockets.ClientConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        # A document created a moment ago may be unknown to the server until its folder entry arrives (and
        # when the server was unreachable meanwhile, until a moment after it is back).
        self._grace = unknown_grace
        self._unknown_until = asyncio.get_running_loop().time() + unknown_grace

    @property
    def text(self) -> Text:
        return self.doc.get(CONTENTS, type=Text)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"lensrelay-sync {self.label}")

    async def stop(self) -> None:
        self._stopping = True
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._socket.close(), 2)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    def send_since(self, state: bytes) -> None:
        """Send what the Doc gained since ``state`` (a state vector taken before a local change)."""
        update = self.doc.get_update(state)
        if self._socket is not None:
            self._outbox.put_nowait(wire.sync_update(update))
        # Otherwise the next connection's step 2 carries it.

    async def caught_up(self, timeout: float = 2.0) -> None:
        """Until the server answered a state vector sent now: what it sent on this socket before (such as
        the link edits of a move it has just made) is then applied here."""
        if self._socket is None:
            return  # the next connection's sync brings it
        answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._answers.append(answer)
        self._outbox.put_nowait(wire.sync_step1(self.doc.get_state()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(answer, timeout)

    def reconnect(self) -> None:
        """Drop the connection (if any) and make a new one: its step 2 brings back anything missed."""
        socket = self._socket
        if socket is not None:
            asyncio.get_running_loop().create_task(socket.close())

    @property
    def connected(self) -> bool:
        return self._socket is not None

    async def _run(self) -> None:
        delay = _BACKOFF_FIRST
        loop = asyncio.get_running_loop()
        while not self._stopping:
            was_open = False
            try:
                async with websockets.connect(
                    self._url,
                    max_size=None,
                    open_timeout=10,
                    ping_interval=20 if self._ping else None,
                    ping_timeout=20 if self._ping else None,
                ) as socket:
                    self._socket = socket
                    was_open = True
                    delay = _BACKOFF_FIRST
                    await socket.send(wire.sync_step1(self.doc.get_state()))
                    sender = asyncio.create_task(self._send(socket))
                    try:
                        async for frame in socket:
                            if isinstance(frame, bytes):
                                await self._receive(socket, frame)
                    finally:
                        sender.cancel()
                        self._socket = None
                        self._drain()
                    code, reason = socket.close_code, socket.close_reason
            except ConnectionClosed as exc:
                self._socket = None
                code = exc.rcvd.code if exc.rcvd else None
                reason = exc.rcvd.reason if exc.rcvd else ""
            except (OSError, InvalidHandshake, TimeoutError) as exc:
                self._socket = None
                code, reason = None, str(exc)
                if self._grace and self.synced.is_set() is False:
                    self._unknown_until = max(self._unknown_until, loop.time() + self._grace)
            if self._stopping:
                return
            if code is not None and 4400 <= code < 4500:
                if code == 4404 and loop.time() < self._unknown_until:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, _BACKOFF_MAX)
                    continue
                self.closed = Closed(f"{self.label}: the server closed it ({code} {reason})")
                self._on_change()
                return
            logger.debug("%s: connection lost (%s %s); reconnecting", self.label, code, reason)
            if self._on_lost is not None and was_open:
                self._on_lost()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _BACKOFF_MAX)

    def _drain(self) -> None:
        while not self._outbox.empty():
            self._outbox.get_nowait()

    async def _send(self, socket: websockets.ClientConnection) -> None:
        while True:
            frame = await self._outbox.get()
            await socket.send(frame)

    async def _receive(self, socket: websockets.ClientConnection, frame: bytes) -> None:
        reader = wire.Reader(frame)
        kind = reader.var_uint()
        if kind == wire.MESSAGE_SYNC:
            step = reader.var_uint()
            if step == wire.SYNC_STEP1:
                await socket.send(wire.sync_step2(self.doc.get_update(reader.var_bytes())))
            elif step in (wire.SYNC_STEP2, wire.SYNC_UPDATE):
                update = reader.var_bytes()
                self.doc.apply_update(update)
                # Not the state vector: an update that only deletes leaves it as it was.
                changed = update != EMPTY_UPDATE
                if step == wire.SYNC_STEP2:
                    self.synced.set()
                    for answer in self._answers:
                        if not answer.done():
                            answer.set_result(None)
                    self._answers.clear()
                if changed or step == wire.SYNC_STEP2:
                    self._on_change()
        elif kind == wire.MESSAGE_AUTH and reader.var_uint() == wire.AUTH_PERMISSION_DENIED:
            self.denied = reader.var_string()
            logger.debug("%s: permission denied: %s", self.label, self.denied)
            self._on_change()
        # Awareness, its queries and Relay's own messages carry nothing a mirror on disk needs.
