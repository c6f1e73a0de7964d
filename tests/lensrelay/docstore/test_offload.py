"""The heavy-work processes: work runs in another process, from the loop and from a request thread, and a
pool whose worker died is replaced instead of failing every later call."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest

from lensrelay.docstore import offload


def _pid_and_length(text: str) -> tuple[int, int]:
    return os.getpid(), len(text)


async def test_work_runs_in_another_process_from_the_loop_and_from_a_thread() -> None:
    pid, length = await offload.offloaded(_pid_and_length, "x" * 100_000)
    assert pid != os.getpid() and length == 100_000
    pid_from_thread, _ = await asyncio.to_thread(offload.offloaded_sync, _pid_and_length, "y")
    assert pid_from_thread == pid  # one long-lived process (LENSRELAY_OFFLOAD_PROCESSES = 1)


async def test_a_killed_worker_is_replaced() -> None:
    pid, _ = await offload.offloaded(_pid_and_length, "")
    os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.5)  # the pool notices its worker is gone
    again, length = await offload.offloaded(_pid_and_length, "abc")
    assert again != pid and length == 3
    assert offload.offloaded_sync(_pid_and_length, "ab") == (again, 2)


async def test_a_pool_size_below_one_still_gets_one_process(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.LENSRELAY_OFFLOAD_PROCESSES = (
        0  # or negative: a typo must not leave big work with nowhere to run
    )
    monkeypatch.setattr(offload, "_pool", None)
    try:
        pid, length = await offload.offloaded(_pid_and_length, "abcd")
        assert pid != os.getpid() and length == 4
        assert offload.offload_pool()._max_workers == 1  # type: ignore[attr-defined]
    finally:
        pool = offload._pool
        if pool is not None:
            pool.shutdown(wait=True)
