"""The derive process works on the CPU the live path leaves (issue 36).

At a nice level the derive process still takes its share of a busy core: beside a server at a team's load
it made the deliveries' p99 several times what it is without it. On Linux its loop thread therefore runs in
the idle scheduling class (SCHED_IDLE), which the kernel runs only when nothing else wants the core. A
server busy for long would then starve it, so each pass tells `SpareCpu.behind` how old the oldest change
it has not derived yet is: past `stretch` seconds the thread returns to the normal class (at the nice
level) until it has caught up, then goes back to idle. Passes also space out as they grow
(`next_pass_in`). Freshness stretches to a few seconds while the server is busy; it is never lost.

Leaving the idle class needs CAP_SYS_NICE (or a nice limit few systems grant). Where it is refused the
thread stays at the nice level instead: idle with no way back could starve for as long as the load lasts.

The database thread keeps the server's priority (see `lower`): it holds SQLite's write lock.
"""

from __future__ import annotations

import logging
import os
import threading

logger = logging.getLogger(__name__)


def _set_policy(policy: int) -> None:
    # pid 0 is the calling thread on Linux: each thread has its own scheduling class.
    os.sched_setscheduler(0, policy, os.sched_param(0))


def idle_class_can_be_left(*, nice: int) -> bool:
    """Whether a thread here at `nice` may enter the idle class and leave it again (probed on a throwaway
    thread, so this one is untouched)."""
    if not hasattr(os, "SCHED_IDLE"):
        return False
    answer: list[bool] = []

    def probe() -> None:
        try:
            _set_policy(os.SCHED_IDLE)
            os.nice(nice)  # leaving idle is checked against the thread's nice level
            _set_policy(os.SCHED_OTHER)
        except OSError:
            answer.append(False)
        else:
            answer.append(True)

    thread = threading.Thread(target=probe, name="lensrelay-sched-probe")
    thread.start()
    thread.join()
    return answer == [True]


# A pass is followed by a rest of at least this many times its own length: under load the derive process
# is busy at most a thirty-second of the time, and each changed note is handled once per longer pass rather
# than once per poll. Most of a pass's work is per changed note (its search row, its links): at a team's
# load (150 notes typed into) a pass took ~0.15 s and handled nearly every note, each changed ~1.6 times
# since the last; a rest of four times that (the first value) re-indexed each note for every other update.
# At fifteen (the second) both team loads were at that bound, so the derive process's CPU was the bound's:
# thirty-one took a third of it off, the views then a second or two behind while a team types (issue 36).
REST_PER_PASS = 31.0


def next_pass_in(*, took: float, poll: float, stretch: float) -> float:
    """Seconds from the end of a pass that took `took` seconds to the start of the next: the poll interval
    while passes are short, longer as they grow, never past `stretch` after this one began."""
    return max(0.0, min(stretch, max(poll, took * (1.0 + REST_PER_PASS))) - took)


class SpareCpu:
    """The calling thread's scheduling: idle while the derive process keeps up, normal (at `nice`) while
    it is more than `stretch` seconds behind. Threads started later take the class of their creator."""

    def __init__(self, *, nice: int, idle: bool, stretch: float) -> None:
        self.nice = nice
        self.idle = idle and idle_class_can_be_left(nice=nice)
        self.stretch = stretch
        self.hurrying = False
        self.hurries = 0

    def lower(self) -> None:
        """Lower the calling thread (the event loop's, before it starts any other)."""
        if self.nice:
            os.nice(self.nice)
        if self.idle:
            _set_policy(os.SCHED_IDLE)
        elif self.nice == 0:
            return
        logger.info("derive process: %s", "idle scheduling class" if self.idle else f"nice {self.nice}")

    def behind(self, seconds: float) -> None:
        """Told each pass how old the oldest change it has not derived yet is (0 when caught up)."""
        if not self.idle:
            return
        hurry = seconds > self.stretch
        if hurry == self.hurrying:
            return
        _set_policy(os.SCHED_OTHER if hurry else os.SCHED_IDLE)
        self.hurrying = hurry
        if hurry:
            self.hurries += 1
            logger.info("derive process %.1fs behind: normal scheduling until caught up", seconds)
