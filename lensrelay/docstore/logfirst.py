"""On SQLite the update log writes first: a write transaction waits for the appends queued before it began.

SQLite has one write lock per file, and it is not fair: a thread that commits and begins again at once (an
Accept all settling 25 suggestions, a search row batch, a version) takes it back before a waiting append
whose busy handler is asleep, so a live change waited for the whole run of transactions (90-190 ms in the
loop-lag test, where the live path promises p99 < 100 ms). Every write transaction here starts with `BEGIN
IMMEDIATE` (settings.py), so a wrapper on that statement is one door for all of them: it waits until the
appends queued when it came are written (at most LOG_FIRST_MAX_WAIT seconds). Appends queued later do not
hold it back, so a steady stream of live changes never starves other writers; and an append waits at most
for the one transaction that held the lock when it came, not for a run of them.

The door is this process's: the log's own writer never waits, PostgreSQL (whose writers lock rows, not the
database) is left alone, and other processes (the derive process, management commands) do not see it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

# A writer waits for the appends queued before it, and never longer than this.
LOG_FIRST_MAX_WAIT = 0.25

_state = threading.Condition()
# Appends ever queued and ever written (or failed) in this process: a writer's ticket is the first count.
_queued = 0
_written = 0
_exempt = threading.local()


def log_appends_queued(count: int = 1) -> None:
    """The update log's writer has `count` more appends to write."""
    global _queued
    with _state:
        _queued += count


def log_appends_written(count: int = 1) -> None:
    """`count` queued appends are written (or failed)."""
    global _written
    with _state:
        _written += count
        _state.notify_all()


def log_appends_pending() -> int:
    return _queued - _written


def exempt_this_thread() -> None:
    """The calling thread writes the log itself: it never waits for the log."""
    _exempt.on = True


def wait_for_log(timeout: float | None = None) -> bool:
    """Wait until the appends queued now are written (True), or `timeout` seconds, LOG_FIRST_MAX_WAIT by
    default (False)."""
    if getattr(_exempt, "on", False):
        return True
    limit = LOG_FIRST_MAX_WAIT if timeout is None else timeout
    with _state:
        ticket = _queued
        return _state.wait_for(lambda: _written >= ticket, timeout=limit)


def _log_first(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    if _queued != _written and sql.startswith("BEGIN"):
        wait_for_log()
    return execute(sql, params, many, context)


def _install(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    # The wrapper list outlives a reconnect (it belongs to the thread's connection object): once only.
    if connection.vendor == "sqlite" and _log_first not in connection.execute_wrappers:
        connection.execute_wrappers.append(_log_first)


connection_created.connect(_install, dispatch_uid="lensrelay.docstore.logfirst")
