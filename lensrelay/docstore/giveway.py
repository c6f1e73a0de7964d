"""On SQLite the derive process leaves the write lock free at least as long as it held it.

The server appends every live change to the update log in the same database file, under SQLite's one write
lock. `logfirst` puts the log first among one process's writers; another process is out of its reach. The
derive process commits transaction after transaction in a pass (a version per note, search rows in chunks),
and one that began again right after a commit took the lock back before an append that had found it taken
asked again (`logwriter.retrying_while_locked`, within a millisecond): the append waited for the whole run
(issue 36).

Once `give_way()` is called (the derive process does, first thing), each write transaction of the process
begins no sooner after the previous one than that one held the lock: at least GIVE_WAY_MIN (the appends'
longest pause between asks), at most GIVE_WAY_MAX. An append then waits for one transaction at most. The
door is logfirst's: every write transaction begins with `BEGIN IMMEDIATE` (settings.py). PostgreSQL's
writers lock rows, not the database: nothing is spaced there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

GIVE_WAY_MIN = 0.001
GIVE_WAY_MAX = 0.005


class _Held(threading.local):
    """This thread's last write transaction: when it began, and when its last statement returned."""

    began: float | None = None
    last: float = 0.0


_held = _Held()
_on = False


def give_way() -> None:
    """Space this process's write transactions on SQLite from now on (the derive process)."""
    global _on
    _on = True
    connection_created.connect(_install, dispatch_uid="lensrelay.docstore.giveway")
    for connection in connections.all(initialized_only=True):  # opened before: this thread's
        _install(None, connection)


def giving_way() -> bool:
    return _on


def rest_before_begin(*, began: float | None, last: float, now: float) -> float:
    """Seconds to wait before a write transaction, the previous one having begun at `began` (None: none)
    and run its last statement at `last`."""
    if began is None:
        return 0.0
    held = min(max(last - began, GIVE_WAY_MIN), GIVE_WAY_MAX)
    return max(0.0, last + held - now)


def _spaced(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    if not _on:
        return execute(sql, params, many, context)
    if sql.startswith("BEGIN"):
        rest = rest_before_begin(began=_held.began, last=_held.last, now=time.monotonic())
        if rest:
            time.sleep(rest)
        result = execute(sql, params, many, context)
        _held.began = _held.last = time.monotonic()
        return result
    result = execute(sql, params, many, context)
    if _held.began is not None and context["connection"].in_atomic_block:
        _held.last = time.monotonic()
    return result


def _install(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    if connection.vendor == "sqlite" and _spaced not in connection.execute_wrappers:
        connection.execute_wrappers.append(_spaced)
