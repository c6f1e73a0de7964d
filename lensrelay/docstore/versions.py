"""How far a Yjs document has got, comparable without the Doc (e.g. in the database thread).

A version is the document's state vector (client id -> clock: what was inserted) plus its delete set
(which ranges of those insertions were deleted). A state vector alone misses deletions: removing a
map key inserts nothing.
"""

from __future__ import annotations

from typing import Any

from pycrdt import Doc

from lensrelay.protocol.wire import MalformedFrame, Reader, var_bytes

Ranges = dict[int, list[tuple[int, int]]]  # client -> [(start clock, end clock)]


def version(doc: Doc[Any]) -> bytes:
    state = doc.get_state()
    # An update from the document's own state carries no insertions, only the whole delete set.
    return var_bytes(state) + var_bytes(doc.get_update(state))


def covers(newer: bytes, older: bytes) -> bool:
    """Whether a document at version `newer` has seen every insertion and deletion of `older`."""
    have_clocks, have_deleted = _decode(newer)
    want_clocks, want_deleted = _decode(older)
    if any(have_clocks.get(client, 0) < clock for client, clock in want_clocks.items()):
        return False
    return all(
        _inside(start, end, have_deleted.get(client, []))
        for client, ranges in want_deleted.items()
        for start, end in ranges
    )


def state_of(data: bytes) -> bytes:
    """The state vector inside a version (what `Doc.get_update` takes)."""
    try:
        return Reader(data).var_bytes()
    except MalformedFrame as exc:
        raise ValueError(f"not a document version: {exc}") from exc


def _inside(start: int, end: int, ranges: list[tuple[int, int]]) -> bool:
    position = start
    for low, high in sorted(ranges):
        if low <= position < high:
            position = high
        if position >= end:
            return True
    return position >= end


def _decode(data: bytes) -> tuple[dict[int, int], Ranges]:
    try:
        outer = Reader(data)
        state, update = Reader(outer.var_bytes()), Reader(outer.var_bytes())
        clocks = {}
        for _ in range(state.var_uint()):
            client = state.var_uint()
            clocks[client] = state.var_uint()
        if update.var_uint() != 0:
            raise ValueError("a version's update carries insertions")
        deleted: Ranges = {}
        for _ in range(update.var_uint()):
            client = update.var_uint()
            ranges = deleted.setdefault(client, [])
            for _ in range(update.var_uint()):
                clock = update.var_uint()
                ranges.append((clock, clock + update.var_uint()))
    except MalformedFrame as exc:
        raise ValueError(f"not a document version: {exc}") from exc
    return clocks, deleted
