"""The directory a served process writes its Prometheus metrics to (`PROMETHEUS_MULTIPROC_DIR`).

prometheus_client decides when first imported whether metric values live in memory or in files of that
directory, where a scrape of any process sharing it reads every process's numbers. The launcher
(`python -m lensrelay.server.serve`) therefore settles the directory before Django and prometheus_client are
imported:

- set (and not empty): used as it is, created if missing. Scaled out, every worker on a machine is given
  the same one, so any worker's `/metrics` answers for all of them. Emptying it is the deployment's
  business, before the workers start: files of earlier runs would add their counts.
- unset: a directory of this run's own, under the system's temporary directory, removed on the way out;
  directories such a run left behind (killed with SIGKILL) are removed at the next start.

On the way out the process marks itself ended, so its live gauges (open connections, rooms) stop counting
while its counters remain.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
RUN_DIR_PREFIX = "lensrelay-metrics-"


@dataclass(frozen=True)
class MetricsDir:
    path: Path
    owned: bool  # made for this run: removed by `finish`

    def finish(self) -> None:
        """This process ends: its live gauges stop counting; a directory of its own is removed."""
        from lensrelay.observability.scrape import process_ended

        with contextlib.suppress(OSError):
            process_ended(os.getpid(), str(self.path))
        if self.owned:
            shutil.rmtree(self.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno != errno.ESRCH
    return True


def remove_abandoned_run_dirs(parent: Path) -> list[Path]:
    """Directories of earlier runs whose launcher no longer exists (its id is in the name)."""
    removed = []
    for candidate in parent.glob(f"{RUN_DIR_PREFIX}*"):
        pid_text = candidate.name[len(RUN_DIR_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or not candidate.is_dir() or candidate.is_symlink():
            continue
        with contextlib.suppress(OSError):
            if candidate.stat().st_uid != os.getuid() or _alive(int(pid_text)):
                continue
            shutil.rmtree(candidate)
            removed.append(candidate)
    return removed


def prepare_metrics_dir() -> MetricsDir:
    """Settle this process's metrics directory; call before prometheus_client is imported."""
    if "prometheus_client.values" in sys.modules:
        raise RuntimeError("the metrics directory must be chosen before prometheus_client is imported")
    given = os.environ.get(MULTIPROC_ENV, "").strip()
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        os.environ[MULTIPROC_ENV] = str(path)
        return MetricsDir(path, owned=False)
    parent = Path(tempfile.gettempdir())
    removed = remove_abandoned_run_dirs(parent)
    if removed:
        logger.info("removed %d metrics directories of ended runs", len(removed))
    path = Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-", dir=parent))
    os.environ[MULTIPROC_ENV] = str(path)
    return MetricsDir(path, owned=True)
