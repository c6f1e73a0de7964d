"""Work on documents a moment after they change: ids are gathered, then each is handled once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

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
        self._task: asyncio.Task[None] | None = None

    def add(self, doc_id: str) -> None:
        self._dirty.add(doc_id)
        if self._task is None or self._task.done():
            self._task = self.store.spawn(self._run())

    def discard(self, doc_id: str) -> None:
        """Forget a pending id whose work the caller is doing itself, right now."""
        self._dirty.discard(doc_id)

    async def settled(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _run(self) -> None:
        if seconds := self.delay():
            await asyncio.sleep(seconds)
        while self._dirty:
            doc_id = self._dirty.pop()
            try:
                await self.handle(doc_id)
            except Exception:
                logger.exception("%r failed for %s", self.handle, doc_id)
