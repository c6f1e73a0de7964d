"""The loop-lag gauge: a stall of the event loop is measured, kept as the maximum, and logged when over
the threshold; a loop that keeps turning logs nothing."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from lensrelay.server import looplag


async def _run_monitor_around(stall_seconds: float, *, threshold_ms: float) -> looplag.LoopLag:
    looplag.loop_lag_reset()
    task = asyncio.create_task(looplag.monitor_loop_lag(interval=0.01, threshold_ms=threshold_ms))
    await asyncio.sleep(0.05)
    if stall_seconds:
        time.sleep(stall_seconds)  # what a big edit planned on the loop used to do
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return looplag.loop_lag()


async def test_a_stall_is_measured_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lensrelay.server.looplag"):
        lag = await _run_monitor_around(0.2, threshold_ms=50)
    assert 150 <= lag.max_ms < 2000, lag
    assert lag.over_threshold >= 1 and lag.samples >= 3
    assert any("event loop lagged" in r.getMessage() for r in caplog.records)


async def test_a_turning_loop_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lensrelay.server.looplag"):
        lag = await _run_monitor_around(0, threshold_ms=1000)
    assert lag.over_threshold == 0 and lag.samples >= 3
    assert not [r for r in caplog.records if "lagged" in r.getMessage()]


async def test_reset_starts_the_maximum_afresh() -> None:
    await _run_monitor_around(0.1, threshold_ms=0)
    before = looplag.loop_lag_reset()
    assert before.max_ms >= 50
    assert looplag.loop_lag().max_ms == 0 and looplag.loop_lag().samples == 0


async def test_the_monitor_starts_once() -> None:
    first = looplag.start_loop_lag_monitor()
    try:
        assert looplag.start_loop_lag_monitor() is first
    finally:
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first


def _busy(seconds: float) -> None:
    """Spin until this thread has had ``seconds`` of CPU (on a loaded machine, wall time runs longer)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def test_the_log_says_whether_the_loop_itself_was_busy(caplog: pytest.LogCaptureFixture) -> None:
    """Work on the loop shows as the loop thread's CPU time; a loop kept waiting (here by a blocking call;
    in production by another process on the same core) shows none: the log line tells the two apart."""

    async def lagged_loop_ms(stall: float, busy: bool) -> float:
        caplog.clear()
        looplag.loop_lag_reset()
        task = asyncio.create_task(looplag.monitor_loop_lag(interval=0.01, threshold_ms=100))
        await asyncio.sleep(0.05)
        _busy(stall) if busy else time.sleep(stall)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        [record] = [r for r in caplog.records if "lagged" in r.getMessage()]
        assert isinstance(record.args, tuple)
        return float(record.args[2])  # the loop thread's milliseconds

    with caplog.at_level(logging.WARNING, logger="lensrelay.server.looplag"):
        assert await lagged_loop_ms(0.3, busy=True) >= 200
        assert await lagged_loop_ms(0.3, busy=False) < 100
