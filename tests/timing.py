"""Wall-clock bounds for work the code limits in CPU time, allowing for a machine loaded by others.

A search stopped after 2 s of CPU takes 2 s of wall time on an idle machine and about ``load / cores``
times that on a busy one (CI runs two test processes, each with its servers; other work may share the
machine). A fixed wall-clock bound then measures the machine, not the code: it is scaled here by the
current load instead, and stays far below what an unbounded search would take.
"""

from __future__ import annotations

import os
from pathlib import Path


def load_factor() -> float:
    """The 1-minute load average per core, at least 1: how much longer than on an idle machine work takes."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def wall_bound(seconds: float) -> float:
    """``seconds`` (a bound for an idle machine) stretched by :func:`load_factor`."""
    return seconds * load_factor()


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time of another process so far (Linux: /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
