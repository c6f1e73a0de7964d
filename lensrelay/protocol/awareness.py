"""Awareness bookkeeping for a room: who is here, so late joiners see them and leavers are removed.

Presence is shared with everyone in the room, view tokens included, so it is bounded: a state holds at
most MAX_STATE_BYTES, a connection introduces at most MAX_CLIENTS_PER_CONNECTION client ids, and its
updates are rate-limited (`AwarenessRate`). Updates that change nothing (the relays y-websocket clients
send of states they learned from others) cost nothing and are not broadcast again. Updates that only
renew unchanged states are told apart (`Received.renewed`), so the room can pass them on in batches.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lensrelay.protocol.wire import MalformedFrame, Reader, var_bytes, var_uint

MAX_STATE_BYTES = 64 * 1024
MAX_CLIENTS_PER_CONNECTION = 8


class AwarenessRefused(Exception):
    """An awareness update that breaks a bound; nothing of it was applied. The message says which."""


@dataclass(frozen=True)
class Received:
    added: list[int]
    removed: list[int]
    changed: bool  # False: every entry was already known (a relay), nothing to broadcast
    # Every news entry only renewed a state already known, unchanged (y-protocols clients do so every
    # 15 s so that peers do not time them out): nobody needs it at once.
    renewed: tuple[int, ...] = ()


class AwarenessRate:
    """Per-connection token buckets for awareness updates: messages and bytes."""

    MESSAGES_PER_SECOND = 20.0
    MESSAGE_BURST = 60.0
    BYTES_PER_SECOND = 128 * 1024.0
    BYTE_BURST = 4.0 * MAX_STATE_BYTES

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._messages: float = self.MESSAGE_BURST
        self._bytes: float = self.BYTE_BURST
        self._last = clock()

    def allow(self, size: int) -> bool:
        now = self._clock()
        elapsed, self._last = now - self._last, now
        self._messages = min(self.MESSAGE_BURST, self._messages + elapsed * self.MESSAGES_PER_SECOND)
        self._bytes = min(self.BYTE_BURST, self._bytes + elapsed * self.BYTES_PER_SECOND)
        if self._messages < 1 or self._bytes < size:
            return False
        self._messages -= 1
        self._bytes -= size
        return True


class AwarenessStates:
    def __init__(self) -> None:
        self._clocks: dict[int, int] = {}
        self._states: dict[int, str] = {}

    def apply(self, update: bytes) -> tuple[list[int], list[int]]:
        """Apply an encoded awareness update; returns (client ids added, client ids removed)."""
        received = self.receive(update)
        return received.added, received.removed

    def receive(
        self, update: bytes, *, may_add: int | None = None, rate: AwarenessRate | None = None
    ) -> Received:
        """Apply an encoded awareness update from a connection that may still introduce `may_add` new
        client ids (None: any number) and whose `rate` must allow it if it changes anything.

        Validates fully before changing anything: malformed updates raise MalformedFrame, updates over
        a bound AwarenessRefused. Clients relay states they learned from others, so only an id's first
        appearance tells which connection it belongs to.
        """
        reader = Reader(update)
        entries: list[tuple[int, int, str]] = []
        for _ in range(reader.var_uint()):
            client_id = reader.var_uint()
            clock = reader.var_uint()
            state = reader.var_string()
            if len(state.encode("utf-8", "surrogatepass")) > MAX_STATE_BYTES:
                raise AwarenessRefused(f"awareness state over {MAX_STATE_BYTES // 1024} KiB: not shared")
            if state != self._states.get(client_id):  # a renewal's state was checked when it was new
                try:
                    json.loads(state)
                except (ValueError, RecursionError) as exc:  # RecursionError: deeper than the parser goes
                    raise MalformedFrame("awareness state is not JSON") from exc
            entries.append((client_id, clock, state))
        if not reader.at_end():
            raise MalformedFrame("trailing bytes after awareness update")
        newcomers = {c for c, _, state in entries if state != "null" and c not in self._states}
        if may_add is not None and len(newcomers) > may_add:
            raise AwarenessRefused(
                f"more than {MAX_CLIENTS_PER_CONNECTION} awareness clients on one connection: not shared"
            )
        news = [entry for entry in entries if self._is_news(*entry)]
        if not news:
            return Received(added=[], removed=[], changed=False)
        if rate is not None and not rate.allow(len(update)):
            raise AwarenessRefused("awareness updates too frequent: some were not shared")
        renewal = all(self._states.get(client_id) == state for client_id, _, state in news)
        added: list[int] = []
        removed: list[int] = []
        for client_id, clock, state in news:
            self._clocks[client_id] = clock
            if state == "null":
                if self._states.pop(client_id, None) is not None:
                    removed.append(client_id)
            else:
                if client_id not in self._states:
                    added.append(client_id)
                self._states[client_id] = state
        renewed = tuple(client_id for client_id, _, _ in news) if renewal else ()
        return Received(added=added, removed=removed, changed=True, renewed=renewed)

    def _is_news(self, client_id: int, clock: int, state: str) -> bool:
        # As y-protocols: only a newer clock counts, or a removal at the same clock.
        known = self._clocks.get(client_id, -1)
        return clock > known or (clock == known and state == "null" and client_id in self._states)

    def encode(self, client_ids: Iterable[int] | None = None) -> bytes:
        ids = list(self._states) if client_ids is None else [c for c in client_ids if c in self._states]
        out = bytearray(var_uint(len(ids)))
        for client_id in ids:
            out += var_uint(client_id) + var_uint(self._clocks[client_id])
            out += var_bytes(self._states[client_id].encode())
        return bytes(out)

    def remove(self, client_ids: Iterable[int]) -> bytes | None:
        """Forget these clients; returns the update that tells others they left, or None."""
        gone = [c for c in client_ids if c in self._states]
        if not gone:
            return None
        out = bytearray(var_uint(len(gone)))
        for client_id in gone:
            clock = self._clocks[client_id] + 1
            self._clocks[client_id] = clock
            del self._states[client_id]
            out += var_uint(client_id) + var_uint(clock) + var_bytes(b"null")
        return bytes(out)

    def __len__(self) -> int:
        return len(self._states)

    def state(self, client_id: int) -> object | None:
        """One client's state (None: not here), parsed alone."""
        state = self._states.get(client_id)
        return None if state is None else json.loads(state)

    @property
    def states(self) -> dict[int, object]:
        return {client_id: json.loads(state) for client_id, state in self._states.items()}
