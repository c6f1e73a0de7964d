"""Notes' modified times, written for a whole store at most once per `MODIFIED_RESOLUTION_SECONDS`.

A note's `modified` column feeds search staleness, `glob`'s order and the admin, all of which are fine a
couple of seconds late. Written per change it was a database write per keystroke; written per note every
few seconds (the form before this one) it was still, at a team's load, one in four or five live appends sent
to the log's writer thread instead of the loop's own connection, and as many single-row updates on the
store's database thread. Here the first change after a quiet spell is written at once, and every note changed
during the next `MODIFIED_RESOLUTION_SECONDS` in one statement when they end; the log's appends carry none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from lensrelay.docstore import persistence

T = TypeVar("T")

MODIFIED_RESOLUTION_SECONDS = 2.0


class StoreHost(Protocol):
    """What of the document store this needs (lensrelay.docstore.store.DocStore)."""

    loop: asyncio.AbstractEventLoop

    async def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    def spawn(self, coro: Any) -> asyncio.Task[Any]: ...


class ModifiedTimes:
    """The notes of one store changed since their modified time was last written."""

    def __init__(self, store: StoreHost) -> None:
        self._store = store
        self._due: set[str] = set()
        self._window: asyncio.TimerHandle | None = None

    def changed(self, doc_id: str) -> None:
        """A change to the note `doc_id` was logged (on the event loop)."""
        if self._window is not None:
            self._due.add(doc_id)
            return
        self._write({doc_id})
        self._window = self._store.loop.call_later(MODIFIED_RESOLUTION_SECONDS, self._window_ended)

    def _window_ended(self) -> None:
        self._window = None
        if self._due:
            due, self._due = self._due, set()
            self._write(due)
            self._window = self._store.loop.call_later(MODIFIED_RESOLUTION_SECONDS, self._window_ended)

    def _write(self, doc_ids: set[str]) -> None:
        self._store.spawn(self._store.db(persistence.touch_modified, sorted(doc_ids)))

    async def flush(self) -> None:
        """Write what the window holds now (the store is closing: its timers will not run)."""
        if self._window is not None:
            self._window.cancel()
            self._window = None
        if self._due:
            due, self._due = self._due, set()
            await self._store.db(persistence.touch_modified, sorted(due))
