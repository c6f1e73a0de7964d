"""The derive process's write transactions leave SQLite's lock free as long as they held it (within
bounds), so the server's appends, from another connection, get in between two of them rather than after
the whole run; nothing is spaced until `give_way()` is called, nor on PostgreSQL."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection, connections, transaction

from lensrelay.docstore import giveway, persistence
from lensrelay.docstore.logwriter import retrying_while_locked
from lensrelay.models import YUpdate

pytestmark = pytest.mark.django_db(transaction=True)

HOLD = 0.003  # each test transaction keeps the lock this long


@pytest.fixture
def giving_way(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(giveway, "_on", False)
    giveway.give_way()
    assert giveway.giving_way()
    yield


def _sqlite_only() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's one write lock; test_postgresql_transactions_are_not_spaced covers the other")


@pytest.mark.parametrize(
    ("began", "last", "now", "rest"),
    [
        (None, 0.0, 1.0, 0.0),  # no transaction before
        (10.0, 10.003, 10.003, 0.003),  # held 3 ms, right after: as long again
        (10.0, 10.003, 10.002 + 0.003, 0.001),  # part of the rest has passed already
        (10.0, 10.050, 10.050, giveway.GIVE_WAY_MAX),  # a long one: at most GIVE_WAY_MAX
        (10.0, 10.0001, 10.0001, giveway.GIVE_WAY_MIN),  # a short one: the appends' retry interval
        (10.0, 10.003, 11.0, 0.0),  # long ago
    ],
)
def test_the_rest_before_a_write_transaction(
    began: float | None, last: float, now: float, rest: float
) -> None:
    assert giveway.rest_before_begin(began=began, last=last, now=now) == pytest.approx(rest, abs=1e-9)


def _transactions(count: int, *, hold: float = HOLD) -> list[tuple[float, float]]:
    """Write `count` transactions back to back, each holding the lock `hold` seconds; (when its BEGIN ran,
    when its last statement returned) of each, seen from inside the spacing."""
    spans: list[list[float]] = []

    def record(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        result = execute(sql, params, many, context)
        if sql.startswith("BEGIN"):
            spans.append([time.monotonic(), time.monotonic()])
        elif context["connection"].in_atomic_block and spans:
            spans[-1][1] = time.monotonic()
        return result

    with connection.execute_wrapper(record):
        for n in range(count):
            with transaction.atomic():
                persistence.append_updates([(f"derived-{n}", b"a", False, "")], writer="derive")
                time.sleep(hold)
                YUpdate.objects.filter(doc_id=f"derived-{n}").update(author="derive")
    return [(began, last) for began, last in spans]


def test_each_write_transaction_begins_no_sooner_than_the_previous_one_held_the_lock(
    giving_way: None,
) -> None:
    _sqlite_only()
    spans = _transactions(5)
    assert len(spans) == 5
    for (began, last), (next_began, _) in itertools.pairwise(spans):
        held = min(max(last - began, giveway.GIVE_WAY_MIN), giveway.GIVE_WAY_MAX)
        assert held >= HOLD
        assert next_began - last >= held


def test_nothing_is_spaced_until_the_process_gives_way(monkeypatch: pytest.MonkeyPatch) -> None:
    _sqlite_only()
    monkeypatch.setattr(giveway, "_on", False)
    spans = _transactions(5, hold=giveway.GIVE_WAY_MAX)
    gaps = [next_began - last for (_, last), (next_began, _) in itertools.pairwise(spans)]
    assert min(gaps) < giveway.GIVE_WAY_MAX


def test_an_append_from_another_connection_gets_in_between_two_transactions_not_after_the_run(
    giving_way: None,
) -> None:
    """What the server's update log writer does when the derive process holds the lock: ask again within a
    millisecond (`retrying_while_locked`). It must not wait for a whole run of transactions."""
    _sqlite_only()
    started = threading.Event()
    spans: list[tuple[float, float]] = []

    def derive() -> None:
        giveway.give_way()  # this thread's connection is new: spaced as the derive process's are
        try:
            with transaction.atomic():
                YUpdate.objects.create(doc_id="first", data=b"a", writer="derive")
                started.set()
                time.sleep(HOLD)
            spans.extend(_transactions(20))
        finally:
            connections.close_all()

    thread = threading.Thread(target=derive)
    thread.start()
    assert started.wait(10)
    retrying_while_locked(
        lambda: persistence.append_updates([("live", b"typed", False, "")], writer="server")
    )
    appended = time.monotonic()
    thread.join()
    assert len(spans) == 20
    # Landed in one of the first gaps (each at least GIVE_WAY_MIN, the retry's longest pause), long before
    # the last of the 20 began; unspaced, a BEGIN right after each COMMIT left it a few microseconds.
    assert appended < spans[5][0]


def test_postgresql_transactions_are_not_spaced(giving_way: None) -> None:
    if connection.vendor == "sqlite":
        pytest.skip("PostgreSQL's writers lock rows, not the database")
    connection.ensure_connection()
    assert giveway._spaced not in connection.execute_wrappers
