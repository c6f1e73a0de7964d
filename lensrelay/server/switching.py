"""How soon the interpreter hands its lock from a busy thread to the event loop.

A worker's Django views, admin pages and database reads run in threads beside the event loop, and only one
thread runs Python at a time. The loop gives the lock up at every system call (each socket it writes to,
each poll for ready sockets) and must then wait for it: a thread busy in Python keeps it for the whole
switch interval, 5 ms by default. A loop turn makes many system calls, so a page being rendered or a
diff being built in a request thread stalled every delivery by 70-90 ms while the loop itself ran 4-6 ms
(`bench/run_loop_lag.py`). With a shorter interval the busy thread yields sooner, at the cost of more
frequent switches while several threads compute, which under a team's load measured as noise.
"""

from __future__ import annotations

import math
import sys

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def switch_interval_seconds() -> float:
    """``LENSRELAY_SWITCH_INTERVAL_MS`` in seconds, or a clear error naming the setting."""
    text = str(settings.LENSRELAY_SWITCH_INTERVAL_MS)
    try:
        milliseconds = float(text)
    except ValueError:
        milliseconds = math.nan
    if not 0.01 <= milliseconds <= 100:  # also refuses nan and inf
        raise ImproperlyConfigured(
            f"LENSRELAY_SWITCH_INTERVAL_MS must be a number of milliseconds from 0.01 to 100, not {text!r}"
        )
    return milliseconds / 1000


def switch_interval_tune() -> None:
    """Set the interpreter's switch interval for this process (the launcher calls it once)."""
    sys.setswitchinterval(switch_interval_seconds())
