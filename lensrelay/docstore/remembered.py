"""Sets of document ids kept in memory, so the live path asks the database nothing per update.

A set is read again at most once per `refresh_seconds`, and at once when its generation counter says this
process changed what it holds. A change passed over because the set said "not here" asks for a read once
the set is due (`recheck_when_due`), so rows another process wrote meanwhile are still found. Subclasses
say what to read and what to do with what a read brings.
"""

from __future__ import annotations

import asyncio
import time

from lensrelay.docstore.store import DocStore


class RememberedDocIds:
    """Per store: a set of document ids from memory, read again when due or when this process changed it."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.doc_ids: frozenset[str] = frozenset()
        self._read_at = float("-inf")
        self._generation = -1
        self._refreshing: asyncio.Task[None] | None = None
        self._recheck: asyncio.TimerHandle | None = None

    def refresh_seconds(self) -> float:
        raise NotImplementedError

    def generation(self) -> int:
        """A counter this process moves whenever it changes what the set holds."""
        raise NotImplementedError

    def read(self) -> frozenset[str]:
        """The set as the database has it now (runs in the store's database thread)."""
        raise NotImplementedError

    def recheck_when_due(self) -> None:
        if self._recheck is None:
            due = max(0.0, self._read_at + self.refresh_seconds() - time.monotonic())
            self._recheck = self.store.loop.call_later(due, self._refresh_now)

    def _refresh_now(self) -> None:
        self._recheck = None
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = self.store.spawn(self._refresh())

    def stale(self) -> bool:
        return (
            self._generation != self.generation()
            or time.monotonic() - self._read_at >= self.refresh_seconds()
        )

    async def current(self) -> frozenset[str]:
        if self.stale():
            if self._refreshing is None or self._refreshing.done():
                self._refreshing = self.store.spawn(self._refresh())
            await asyncio.shield(self._refreshing)
        return self.doc_ids

    async def _refresh(self) -> None:
        generation, read_at = self.generation(), time.monotonic()
        found = await self.store.db(self.read)
        self.doc_ids, self._read_at, self._generation = found, read_at, generation
