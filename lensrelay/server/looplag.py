"""Event-loop lag: how late the loop runs a callback it was asked to run on time.

Every live client of a worker shares its one event loop, so any stretch of synchronous work (a big edit
planned on the loop, a huge page rendered there) delays every delivery on every document by as long. A
small task sleeps for a fixed interval and measures how much later than asked it woke up; a lag over
``LENSRELAY_LOOP_LAG_LOG_MS`` is logged as a warning. :func:`loop_lag` reports the last and the largest lag
seen; every sample is also exported to Prometheus (`lensrelay_event_loop_lag_seconds`, a histogram, and the
last sample, lensrelay.observability.metrics).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from django.conf import settings

from lensrelay.observability import metrics

logger = logging.getLogger(__name__)

# Short enough to catch a 50 ms stall, long enough to cost nothing (20 wake-ups a second).
SAMPLE_SECONDS = 0.05


@dataclass(frozen=True)
class LoopLag:
    """Milliseconds: the last sample, the largest since start (or the last reset), how many samples."""

    last_ms: float
    max_ms: float
    samples: int
    over_threshold: int


class _Gauge:
    def __init__(self) -> None:
        self.last_ms = 0.0
        self.max_ms = 0.0
        self.samples = 0
        self.over_threshold = 0

    def record(self, lag_ms: float, threshold_ms: float, cpu: _CpuSpent | None = None) -> None:
        self.last_ms = lag_ms
        self.max_ms = max(self.max_ms, lag_ms)
        self.samples += 1
        metrics.loop_lag_observe(lag_ms / 1000)
        if threshold_ms > 0 and lag_ms > threshold_ms:
            self.over_threshold += 1
            if cpu is None:
                logger.warning("event loop lagged %.0f ms (threshold %.0f ms)", lag_ms, threshold_ms)
            else:
                logger.warning(
                    "event loop lagged %.0f ms (threshold %.0f ms); meanwhile the loop's thread ran %.0f ms, "
                    "other threads %.0f ms",
                    lag_ms,
                    threshold_ms,
                    cpu.loop_ms,
                    cpu.others_ms,
                )


@dataclass(frozen=True)
class _CpuSpent:
    """CPU time over one sample: a lag with a busy loop thread is work on the loop; with busy other threads,
    the loop waited for the interpreter lock; with neither, the machine ran something else."""

    loop_ms: float
    others_ms: float


class _CpuClock:
    def __init__(self) -> None:
        self.thread = time.thread_time()
        self.process = time.process_time()

    def spent(self) -> _CpuSpent:
        thread, process = time.thread_time(), time.process_time()
        loop_ms = (thread - self.thread) * 1000
        others_ms = max(0.0, (process - self.process) * 1000 - loop_ms)
        self.thread, self.process = thread, process
        return _CpuSpent(loop_ms, others_ms)


_gauge = _Gauge()
_task: asyncio.Task[None] | None = None


def loop_lag() -> LoopLag:
    """The gauge as it stands: what a metrics endpoint exports."""
    return LoopLag(_gauge.last_ms, _gauge.max_ms, _gauge.samples, _gauge.over_threshold)


def loop_lag_reset() -> LoopLag:
    """The gauge, then its maximum and counts start afresh (a scrape that wants the max per interval)."""
    current = loop_lag()
    _gauge.max_ms = 0.0
    _gauge.samples = 0
    _gauge.over_threshold = 0
    return current


async def monitor_loop_lag(*, interval: float = SAMPLE_SECONDS, threshold_ms: float | None = None) -> None:
    """Measure the running loop's lag forever (cancel the task to stop)."""
    loop = asyncio.get_running_loop()
    threshold = float(settings.LENSRELAY_LOOP_LAG_LOG_MS) if threshold_ms is None else threshold_ms
    clock = _CpuClock()
    while True:
        asked = loop.time()
        await asyncio.sleep(interval)
        _gauge.record(max(0.0, (loop.time() - asked - interval) * 1000), threshold, clock.spent())
        # The live path's gathered counts reach prometheus_client even while nothing is counted.
        metrics.flush_live_counts_if_due()


def start_loop_lag_monitor() -> asyncio.Task[None]:
    """Start the monitor on the running loop, once per process; later calls return the same task."""
    global _task
    if _task is None or _task.done():
        _task = asyncio.get_running_loop().create_task(monitor_loop_lag(), name="loop-lag monitor")
    return _task
