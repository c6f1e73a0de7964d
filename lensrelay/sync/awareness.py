"""Awareness bookkeeping for a room: who is here, so late joiners see them and leavers are removed."""

from __future__ import annotations

import json
from collections.abc import Iterable

from lensrelay.sync.wire import MalformedFrame, Reader, var_bytes, var_uint


class AwarenessStates:
    def __init__(self) -> None:
        self._clocks: dict[int, int] = {}
        self._states: dict[int, str] = {}

    def apply(self, update: bytes) -> tuple[list[int], list[int]]:
        """Apply an encoded awareness update; returns (client ids added, client ids removed).

        Validates fully before changing anything. Clients relay states they learned from others, so
        only an id's first appearance tells which connection it belongs to.
        """
        reader = Reader(update)
        entries: list[tuple[int, int, str]] = []
        for _ in range(reader.var_uint()):
            client_id = reader.var_uint()
            clock = reader.var_uint()
            state = reader.var_string()
            try:
                json.loads(state)
            except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the parser goes
                raise MalformedFrame("awareness state is not JSON") from exc
            entries.append((client_id, clock, state))
        if not reader.at_end():
            raise MalformedFrame("trailing bytes after awareness update")
        added: list[int] = []
        removed: list[int] = []
        for client_id, clock, state in entries:
            known = self._clocks.get(client_id, -1)
            if clock < known:
                continue
            self._clocks[client_id] = clock
            if state == "null":
                if self._states.pop(client_id, None) is not None:
                    removed.append(client_id)
            else:
                if client_id not in self._states:
                    added.append(client_id)
                self._states[client_id] = state
        return added, removed

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

    @property
    def states(self) -> dict[int, object]:
        return {client_id: json.loads(state) for client_id, state in self._states.items()}
