"""The server process's cyclic garbage collector, tuned for many long-lived connections.

Under a team's load (a thousand sockets, each with its protocol, consumer and document state) Python's
default thresholds run a full collection every few seconds, and each walks every connection's objects:
the loop stops 100-200 ms and every delivery on every document waits (measured in bench/run_team.py).
Raising the thresholds makes full collections rare; freezing what startup built (Django, the apps, the
modules) keeps them out of every later walk. Reference counting still frees almost everything at once:
only garbage in cycles waits longer.
"""

from __future__ import annotations

import gc

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def gc_thresholds() -> tuple[int, int, int]:
    """``LENSRELAY_GC_THRESHOLDS`` as three positive integers, or a clear error naming the setting."""
    text = str(settings.LENSRELAY_GC_THRESHOLDS)
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) < 1:
        raise ImproperlyConfigured(
            f"LENSRELAY_GC_THRESHOLDS must be three positive integers like '700,10,10', not {text!r}"
        )
    return values[0], values[1], values[2]


def collector_tune() -> None:
    """Set the thresholds and move everything startup made out of the collector's way (call once, after
    Django is set up and the application imported)."""
    thresholds = gc_thresholds()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)
