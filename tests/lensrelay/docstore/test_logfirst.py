"""The update log writes first on SQLite: another write transaction of the process waits for the appends
queued when it began (not later ones), at most a bounded time, and the log's own writer never waits;
PostgreSQL is left alone."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from django.db import connection, connections

from lensrelay.docstore import logfirst, persistence
from lensrelay.docstore.logwriter import LogWriter
from lensrelay.models import YUpdate

pytestmark = pytest.mark.django_db(transaction=True)


def _write_in_a_thread(doc_id: str, *, exempt: bool = False) -> tuple[threading.Thread, dict[str, float]]:
    """Append one row from a thread of its own (its own connection, as the store's database thread has);
    the dict gets the time its transaction returned."""
    done: dict[str, float] = {}

    def run() -> None:
        if exempt:
            logfirst.exempt_this_thread()
        try:
            persistence.append_updates([(doc_id, b"row", False, "")], writer="other")
            done["at"] = time.monotonic()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


@pytest.fixture
def queued() -> Any:
    """One append queued for the log (released by the test or at its end)."""
    logfirst.log_appends_queued()
    yield
    if logfirst.log_appends_pending():
        logfirst.log_appends_written(logfirst.log_appends_pending())


def _sqlite_only() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("checked on SQLite; test_postgresql_writers_never_wait_for_the_log covers the other")


def test_a_write_transaction_waits_while_appends_are_queued_and_goes_on_once_they_are_written(
    queued: None,
) -> None:
    _sqlite_only()
    thread, done = _write_in_a_thread("waits")
    time.sleep(0.1)
    assert "at" not in done, "the transaction began while the log had an append queued"
    released = time.monotonic()
    logfirst.log_appends_written()
    thread.join(5)
    assert done["at"] - released < 0.1
    assert YUpdate.objects.filter(doc_id="waits").count() == 1


def test_the_wait_is_bounded_so_no_writer_starves(queued: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _sqlite_only()
    monkeypatch.setattr(logfirst, "LOG_FIRST_MAX_WAIT", 0.3)
    started = time.monotonic()
    thread, done = _write_in_a_thread("bounded")
    thread.join(5)
    assert 0.3 <= done["at"] - started < 2.0
    assert YUpdate.objects.filter(doc_id="bounded").count() == 1


def test_appends_queued_after_a_writer_came_do_not_hold_it_back(queued: None) -> None:
    """A steady stream of live changes must not starve the other writers: each waits only for the appends
    that were queued when it began."""
    _sqlite_only()
    thread, done = _write_in_a_thread("ticket")
    time.sleep(0.05)
    logfirst.log_appends_queued()  # a newer append, still queued below
    time.sleep(0.05)
    assert "at" not in done
    released = time.monotonic()
    logfirst.log_appends_written()  # the one queued before the writer came
    thread.join(5)
    assert done["at"] - released < 0.1
    assert logfirst.log_appends_pending() == 1


def test_the_log_writer_thread_itself_never_waits(queued: None) -> None:
    started = time.monotonic()
    thread, done = _write_in_a_thread("exempt", exempt=True)
    thread.join(5)
    assert done["at"] - started < 0.25


def test_postgresql_writers_never_wait_for_the_log(queued: None) -> None:
    if connection.vendor == "sqlite":
        pytest.skip("the PostgreSQL pass checks this")
    started = time.monotonic()
    thread, done = _write_in_a_thread("free")
    thread.join(5)
    assert done["at"] - started < 0.25


async def test_the_log_writer_counts_its_queue_down_to_nothing_even_when_an_append_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = persistence.append_updates

    def refusing(entries: Any, *, writer: str) -> list[int]:
        if any(doc_id == "bad" for doc_id, *_ in entries):
            raise RuntimeError("refused")
        return real(entries, writer=writer)

    monkeypatch.setattr(persistence, "append_updates", refusing)
    writer = LogWriter(asyncio.get_running_loop(), writer="counted", prepare=lambda: None)
    try:
        futures = [writer.append("bad" if n == 2 else "good", bytes([n])) for n in range(6)]
        await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), timeout=10)
    finally:
        await asyncio.get_running_loop().run_in_executor(None, writer.close)
    assert logfirst.log_appends_pending() == 0
