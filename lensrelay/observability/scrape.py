"""What a scrape of `/metrics` answers: every process's counters, plus numbers read at scrape time.

Scaled out (`PROMETHEUS_MULTIPROC_DIR` set before prometheus_client was imported), every worker writes its
metrics into files of that directory and a scrape of any worker merges all of them, so each worker
answers for the whole set. Counters and histograms of processes that ended are kept (a counter never goes
backwards); their `livesum`/`livemax` gauges are removed when they end (`process_ended`, which the launcher
calls on its way out) and, for a process killed without that chance, by the next scrape, which drops the
live gauges of process ids that no longer exist on this machine. Without the directory, the process's own
registry is exported (with the process and platform collectors).

Numbers that live in the database, not in any process (pending suggestions, the derive process's
backlog), are read when scraped by gauges registered with `scrape_gauge`: the apps that own those tables
register them, as nothing here may import them.
"""

from __future__ import annotations

import errno
import glob
import logging
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, values
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Files of live-only gauges, one per mode and process: gauge_livesum_<pid>.db.
_LIVE_FILE = re.compile(r"^gauge_live[a-z]+_(\d+)\.db$")


@dataclass(frozen=True)
class ScrapeGauge:
    name: str
    documentation: str
    # The value now; None when there is nothing to say (the family is then left out of the scrape).
    read: Callable[[], float | None]


_gauges: dict[str, ScrapeGauge] = {}


def scrape_gauge(*, name: str, documentation: str, read: Callable[[], float | None]) -> None:
    """Register a gauge read when `/metrics` is scraped (from a sync view thread: queries are fine).
    Registering a name again replaces it (an app's ready() may run twice in tests)."""
    _gauges[name] = ScrapeGauge(name, documentation, read)


def scrape_gauges() -> list[ScrapeGauge]:
    return list(_gauges.values())


class ScrapeCollector(Collector):
    """The registered scrape-time gauges; one that fails is logged and left out, never fails the scrape."""

    def collect(self) -> Iterable[Metric]:
        for gauge in list(_gauges.values()):
            try:
                value = gauge.read()
            except Exception:
                logger.exception("could not read the metric %s", gauge.name)
                continue
            if value is not None:
                yield GaugeMetricFamily(gauge.name, gauge.documentation, value=float(value))


class _ProcessRegistry(Collector):
    """This process's own registry, as one collector of the scrape's registry."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def multiprocess_dir() -> str | None:
    """The shared directory this process writes its metrics to, or None (its own registry only).

    prometheus_client chooses at import whether values go to files, from the environment at that moment:
    a directory named later changes nothing for this process."""
    if not getattr(values.ValueClass, "_multiprocess", False):
        return None
    path = os.environ.get(MULTIPROC_ENV) or None
    return path if path and os.path.isdir(path) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno != errno.ESRCH  # EPERM: it exists, as another user's
    return True


def sweep_ended_processes(path: str) -> list[int]:
    """Drop the live gauges of processes that ended without saying so (SIGKILL, a crash). Returns their
    ids. Workers sharing a directory share a machine and its process ids (docs/metrics.md)."""
    ended = set()
    for name in os.listdir(path):
        match = _LIVE_FILE.match(name)
        if match is not None:
            pid = int(match.group(1))
            if pid != os.getpid() and not _alive(pid):
                ended.add(pid)
    for pid in ended:
        mark_process_dead(pid, path)
    return sorted(ended)


def process_ended(pid: int, path: str | None = None) -> None:
    """Process `pid` has ended: its live gauges stop counting (its counters stay)."""
    path = path or multiprocess_dir()
    if path is not None:
        mark_process_dead(pid, path)


def metrics_registry() -> CollectorRegistry:
    """A registry for one scrape: every process's metrics (or this one's), then the scrape-time gauges."""
    registry = CollectorRegistry(auto_describe=False)
    path = multiprocess_dir()
    if path is not None:
        sweep_ended_processes(path)
        MultiProcessCollector(registry, path=path)
    else:
        registry.register(_ProcessRegistry())
    registry.register(ScrapeCollector())
    return registry


def metrics_exposition(*, accept: str = "") -> tuple[bytes, str]:
    """The scrape's body and content type: OpenMetrics when the scraper asks for it, else Prometheus'
    text format."""
    encode, content_type = choose_encoder(accept)
    return encode(metrics_registry()), content_type


def multiprocess_files(path: str) -> list[str]:
    """The metric files in `path` (diagnostics and tests)."""
    return sorted(glob.glob(os.path.join(path, "*.db")))
