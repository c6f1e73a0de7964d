"""The heavy-work processes: pure CPU work on megabytes of text (planning a big edit, rendering a huge note
for review, diffing a long note's version against now) runs here, not in the server process.

A worker *thread* would not do: that work spends long stretches in C calls on megabyte strings (regular
expressions, joins, decoding) that hold the GIL for their whole length, and pure-Python stretches that
take it back every few milliseconds, so the event loop serving every live client of the worker stalls as
surely as if the work ran on it. What runs here is a plain function of picklable values that touches no
Doc, no database and no Django setting (the processes are spawned and never call ``django.setup()``).

``LENSRELAY_OFFLOAD_PROCESSES`` processes are started on first use ("spawn": the server's threads and open
sockets are not forked into them) and live as long as the server.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from django.conf import settings

T = TypeVar("T")

_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()  # request threads and the event loop may ask for the pool at once


def offload_pool() -> ProcessPoolExecutor:
    """The one pool of this process; a pool broken by a dead worker (killed, out of memory) is replaced."""
    global _pool
    with _lock:
        if _pool is None or getattr(_pool, "_broken", False):
            _pool = ProcessPoolExecutor(
                max_workers=max(1, int(settings.LENSRELAY_OFFLOAD_PROCESSES)),
                mp_context=multiprocessing.get_context("spawn"),
            )
        return _pool


async def offloaded(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a heavy-work process; the loop only waits for the answer."""
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(offload_pool(), fn, *args)
    except BrokenProcessPool:
        return await loop.run_in_executor(offload_pool(), fn, *args)  # once more, in a fresh pool


def offloaded_sync(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a heavy-work process, from synchronous code (an admin view's request thread)."""
    try:
        return offload_pool().submit(fn, *args).result()
    except BrokenProcessPool:
        return offload_pool().submit(fn, *args).result()
