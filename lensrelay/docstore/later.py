"""Work on documents a moment after they change: ids are gathered, then each is handled once.

`Debounced` is the debouncer of every derived view (lensrelay.docstore.derived); `Later` hands each id to
its handler on its own, in rounds, for folder mirroring and the path index; `Spaced` handles each document
at most once per interval, for a view the derive process keeps whose work per document is costly.
"""

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


class Debounced:
    """The one debouncer of derived work (lensrelay.docstore.derived): documents are gathered as they change
    and handed to `handle(doc_ids)` a moment later, each once however often it changed meanwhile.

    - By default, `delay()` seconds after the first document of a round, every document gathered is handled
      in one call; documents added while a round is handled form the next round, which waits the delay
      again. A document edited without pause (a person typing) is handled once per delay, not back to back:
      each handling is a trip to the database thread, whose Python holds the GIL the live sync needs.
    - `quiet=True`: each document on its own, `delay()` seconds after it was last added (a burst handled
      once it goes quiet); `timers` holds the documents waiting.

    `delay` is a callable so a module-level setting (patched in tests) is read at run time.
    """

    def __init__(
        self,
        store: DocStore,
        handle: Callable[[frozenset[str]], Awaitable[None]],
        *,
        delay: Callable[[], float],
        quiet: bool = False,
        name: str = "",
    ) -> None:
        self.store = store
        self.handle = handle
        self.delay = delay
        self.quiet = quiet
        self.name = name or repr(handle)
        self._dirty: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self._handling: set[asyncio.Task[None]] = set()

    def add(self, *doc_ids: str) -> None:
        if self.quiet:
            for doc_id in doc_ids:
                timer = self.timers.pop(doc_id, None)
                if timer is not None:
                    timer.cancel()
                self.timers[doc_id] = self.store.loop.call_later(self.delay(), self._went_quiet, doc_id)
            return
        self._dirty.update(doc_ids)
        if self._dirty and (self._task is None or self._task.done()):
            self._task = self.store.spawn(self._run())

    def discard(self, *doc_ids: str) -> None:
        """Forget pending documents whose work the caller is doing itself, right now."""
        self._dirty.difference_update(doc_ids)
        for doc_id in doc_ids:
            timer = self.timers.pop(doc_id, None)
            if timer is not None:
                timer.cancel()

    async def settled(self) -> None:
        """Wait until the documents gathered so far are handled (quiet ones: those whose time has come)."""
        while (self._task is not None and not self._task.done()) or self._handling:
            if self._task is not None and not self._task.done():
                await asyncio.shield(self._task)
            if self._handling:
                await asyncio.wait(list(self._handling))

    async def _run(self) -> None:
        while self._dirty:
            if seconds := self.delay():
                await asyncio.sleep(seconds)
            batch, self._dirty = frozenset(self._dirty), set()
            await self._handled(batch)

    def _went_quiet(self, doc_id: str) -> None:
        self.timers.pop(doc_id, None)
        task = self.store.spawn(self._handled(frozenset({doc_id})))
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    async def _handled(self, batch: frozenset[str]) -> None:
        with failures_logged(logger, "%s for %d documents", self.name, len(batch)):
            await self.handle(batch)


# A waiting document whose time comes within this many seconds is handled with those due now: the loop's
# timers may fire a little early, and one round is cheaper than two a moment apart.
SPACED_SLACK = 0.05


class Spaced:
    """Each document handled at most once per `spacing()` seconds: `add` hands `handle` at once those not
    handled that recently, and keeps the others until their time, when they are handled together. A
    note typed into without pause is handled every `spacing()` seconds rather than on every call, a note
    changed once is handled at once, and the last change of every note is handled.

    What waits is only in memory: a view using it must find what a stopped process still owed another
    way (search rows compare each note's modified time with their own, lensrelay.search.maintain).
    """

    def __init__(
        self,
        store: DocStore,
        handle: Callable[[frozenset[str]], Awaitable[None]],
        *,
        spacing: Callable[[], float],
        name: str = "",
    ) -> None:
        self.store = store
        self.handle = handle
        self.spacing = spacing
        self.name = name or repr(handle)
        self.handled: dict[str, float] = {}  # doc_id: loop time it was last handled, within spacing()
        self.waiting: set[str] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._rounds: set[asyncio.Task[None]] = set()

    async def add(self, doc_ids: Iterable[str]) -> None:
        """Handle the documents not handled within `spacing()` seconds now; the others wait their time."""
        now = self.store.loop.time()
        self._forget_before(now - self.spacing())
        ids = set(doc_ids)
        due = frozenset(ids.difference(self.handled))
        self.waiting |= ids - due
        self.waiting -= due
        await self._round(due, now)

    async def settled(self) -> None:
        """Wait until no document waits (tests, shutdown)."""
        while self.waiting or self._rounds:
            if self._rounds:
                await asyncio.wait(list(self._rounds))
            else:
                await asyncio.sleep(SPACED_SLACK)

    async def flush(self) -> None:
        """Handle every waiting document now (a process about to stop)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        due, self.waiting = frozenset(self.waiting), set()
        await self._round(due, self.store.loop.time())
        await self.settled()

    def _forget_before(self, oldest: float) -> None:
        self.handled = {doc_id: at for doc_id, at in self.handled.items() if at > oldest}

    async def _round(self, due: frozenset[str], now: float) -> None:
        for doc_id in due:
            self.handled[doc_id] = now
        if due:
            with failures_logged(logger, "%s for %d documents", self.name, len(due)):
                await self.handle(due)
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None or not self.waiting:
            return
        first = min(self.handled.get(doc_id, 0.0) for doc_id in self.waiting) + self.spacing()
        self._timer = self.store.loop.call_at(first, self._time_came)

    def _time_came(self) -> None:
        self._timer = None
        now = self.store.loop.time()
        self._forget_before(now + SPACED_SLACK - self.spacing())
        due = frozenset(self.waiting.difference(self.handled))
        self.waiting -= due
        task = self.store.spawn(self._round(due, now))
        self._rounds.add(task)
        task.add_done_callback(self._rounds.discard)


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
