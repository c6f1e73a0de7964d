"""Work on documents a moment after they change: ids are gathered, then each is handled once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from lensrelay.docstore.panics import failures_logged

if TYPE_CHECKING:
    from lensrelay.docstore.store import DocStore

logger = logging.getLogger(__name__)


class Later:
    """Runs `handle(doc_id)` for every id added, after `delay()` seconds, coalescing repeats.

    `delay` is a callable so a module-level setting (patched in tests) is read at run time.
    """

    def __init__(
        self, store: DocStore, handle: Callable[[str], Awaitable[None]], *, delay: Callable[[], float]
    ) -> None:
        self.store = store
        self.handle = handle
        self.delay = delay
        self._dirty: set[str] = set()
        self._round: set[str] = set()  # the ids of the round being handled
        self._task: asyncio.Task[None] | None = None

    def add(self, doc_id: str) -> None:
        self._dirty.add(doc_id)
        if self._task is None or self._task.done():
            self._task = self.store.spawn(self._run())

    def discard(self, doc_id: str) -> None:
        """Forget a pending id whose work the caller is doing itself, right now."""
        self._dirty.discard(doc_id)
        self._round.discard(doc_id)

    async def settled(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _run(self) -> None:
        # Ids added while a round is handled wait the delay again: a document edited without pause (a
        # person typing) is handled once per delay, not back to back after every handling. Each
        # handling is a trip to the database thread, whose Python holds the GIL the live sync needs.
        while self._dirty:
            if seconds := self.delay():
                await asyncio.sleep(seconds)
            self._round, self._dirty = self._dirty, set()
            while self._round:
                doc_id = self._round.pop()
                with failures_logged(logger, "%r for %s", self.handle, doc_id):
                    await self.handle(doc_id)


class LaterBatch:
    """Runs `handle(ids)` on every id added, after `delay()` seconds, in one call per gathered batch.

    For work that is cheaper in bulk (embedding passages): ids added while a batch runs form the next one.
    """

    def __init__(
        self,
        store: DocStore,
        handle: Callable[[set[str]], Awaitable[None]],
        *,
        delay: Callable[[], float],
    ) -> None:
        self.store = store
        self.handle = handle
        self.delay = delay
        self.pending: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    def add(self, doc_ids: Iterable[str]) -> None:
        self.pending.update(doc_ids)
        if self.pending and (self._task is None or self._task.done()):
            self._task = self.store.spawn(self._run())

    async def settled(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _run(self) -> None:
        while self.pending:
            await asyncio.sleep(self.delay())
            batch, self.pending = self.pending, set()
            with failures_logged(logger, "%r for %d documents", self.handle, len(batch)):
                await self.handle(batch)


class Once:
    """A catch-up that runs once per store (before a first query, say), and again if it failed."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self._task: asyncio.Task[None] | None = None

    async def run(self, work: Callable[[], Awaitable[None]]) -> None:
        task = self._task
        failed = task is not None and task.done() and (task.cancelled() or task.exception() is not None)
        if task is None or failed:
            self._task = self.store.spawn(work())
        assert self._task is not None
        await asyncio.shield(self._task)
