"""Coalesced database trips (mcp_tools.callers.trips): fewer trips, the same answers and the same
durability."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone

from mcp_tools.callers import memory, trips
from mcp_tools.models import CredentialGeneration, ReadMark

pytestmark = pytest.mark.django_db(transaction=True)


class NoLoopWay:
    """The SQLite shortcut unavailable (as on PostgreSQL, or with a writer holding the lock)."""

    def generation(self) -> None:
        return None

    def write_mark(self, mark: Any) -> bool:
        return False


@pytest.fixture
def coalesced_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trips, "_loop_sqlite", NoLoopWay())


@pytest.fixture
def counted(counted_any: list[int], coalesced_only: None) -> list[int]:
    """How many marks each trip carried, one entry per trip (every statement takes a trip)."""
    return counted_any


@pytest.fixture
def counted_any(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many marks each trip carried, one entry per trip."""
    sizes: list[int] = []
    run = trips._run

    def counting(marks: list[Any]) -> Any:
        sizes.append(len(marks))
        return run(marks)

    monkeypatch.setattr(trips, "_arun", sync_to_async(counting))
    return sizes


async def test_the_counter_is_read_after_the_call_began(counted: list[int]) -> None:
    assert await trips.generation() == -1  # no row yet
    await sync_to_async(memory.generation_bump)()
    assert await trips.generation() == 1
    await CredentialGeneration.objects.filter(pk=1).aupdate(value=41)
    assert await trips.generation() == 41
    assert counted == [0, 0, 0]


async def test_requests_asking_at_once_share_one_trip(counted: list[int]) -> None:
    now = timezone.now()
    asked = [trips.generation() for _ in range(10)] + [
        trips.write_mark(session_key="s", doc_id=f"doc-{i}", read_at=now) for i in range(10)
    ]
    await asyncio.gather(*asked)
    # The first caller starts a trip alone; everyone who asked while it ran goes in the next one.
    assert len(counted) <= 2 and sum(counted) == 10
    assert await ReadMark.objects.filter(session_key="s").acount() == 10


@pytest.mark.parametrize("way", ["loop", "coalesced"])
async def test_a_mark_is_committed_when_write_mark_returns_and_moves_forward(
    way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if way == "coalesced":
        monkeypatch.setattr(trips, "_loop_sqlite", NoLoopWay())
    earlier = timezone.now() - timedelta(minutes=5)
    await trips.write_mark(session_key="s", doc_id="d", read_at=earlier)
    assert [m.read_at async for m in ReadMark.objects.all()] == [earlier]
    later = timezone.now()
    await trips.write_mark(session_key="s", doc_id="d", read_at=later)
    assert [m.read_at async for m in ReadMark.objects.all()] == [later]


@pytest.mark.parametrize("way", ["loop", "coalesced"])
async def test_a_mark_that_cannot_be_written_fails_alone(way: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if way == "coalesced":
        monkeypatch.setattr(trips, "_loop_sqlite", NoLoopWay())
    now = timezone.now()
    null_doc: Any = None  # NOT NULL: refused by SQLite and PostgreSQL alike
    results = await asyncio.gather(
        trips.write_mark(session_key="good", doc_id="d", read_at=now),
        trips.write_mark(session_key="bad", doc_id=null_doc, read_at=now),
        trips.generation(),
        return_exceptions=True,
    )
    assert results[0] is None
    assert isinstance(results[1], IntegrityError)
    assert results[2] == -1
    assert [m.session_key async for m in ReadMark.objects.all()] == ["good"]


async def test_a_failing_trip_fails_its_requests_and_the_next_trip_works(
    monkeypatch: pytest.MonkeyPatch, coalesced_only: None
) -> None:
    from django.db import OperationalError

    def broken(marks: list[Any]) -> Any:
        raise OperationalError("the database went away")

    monkeypatch.setattr(trips, "_arun", sync_to_async(broken))
    results = await asyncio.gather(trips.generation(), trips.generation(), return_exceptions=True)
    assert all(isinstance(r, OperationalError) for r in results)
    monkeypatch.setattr(trips, "_arun", sync_to_async(trips._run))
    assert await trips.generation() == -1


async def test_a_cancelled_request_does_not_disturb_the_others(coalesced_only: None) -> None:
    first = asyncio.ensure_future(trips.generation())
    second = asyncio.ensure_future(trips.generation())
    await asyncio.sleep(0)
    first.cancel()
    assert await second == -1
    assert first.cancelled()


# ------------------------------------------------------------------------- SQLite, on the loop's thread

sqlite_only = pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3", reason="the SQLite shortcut"
)


@sqlite_only
async def test_on_sqlite_the_loop_answers_without_a_trip(counted_any: list[int]) -> None:
    await sync_to_async(memory.generation_bump)()
    assert await trips.generation() == 1
    await CredentialGeneration.objects.filter(pk=1).aupdate(value=7)  # committed by Django's connection
    assert await trips.generation() == 7
    await trips.write_mark(session_key="s", doc_id="d", read_at=timezone.now())
    assert await ReadMark.objects.filter(session_key="s", doc_id="d").aexists()
    assert counted_any == []


@sqlite_only
async def test_on_sqlite_a_held_write_lock_sends_the_mark_on_a_trip(counted_any: list[int]) -> None:
    other = sqlite3.connect(str(settings.DATABASES["default"]["NAME"]), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        # Reads are not blocked by a writer in WAL mode: still answered on the loop.
        assert await trips.generation() == -1
        writing = asyncio.ensure_future(trips.write_mark(session_key="s", doc_id="d", read_at=timezone.now()))
        await asyncio.sleep(0.2)
        assert not writing.done()  # waiting on its trip, not stalling the loop (we got here)
    finally:
        other.execute("COMMIT")
        other.close()
    await asyncio.wait_for(writing, 10)
    assert counted_any == [1]
    assert await ReadMark.objects.filter(session_key="s").aexists()


@sqlite_only
async def test_on_sqlite_the_loops_connection_is_as_durable_as_djangos_and_no_more() -> None:
    # FULL would fsync the log on every read mark with the event loop waiting (~10 ms each).
    await trips.generation()
    loop_level = trips._loop_sqlite._connection()
    assert loop_level is not None
    ours = loop_level.execute("PRAGMA synchronous").fetchone()[0]

    def djangos() -> int:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous")
            return int(cursor.fetchone()[0])

    assert ours == await sync_to_async(djangos)() == 1  # NORMAL


def test_sqlite_datetimes_are_stored_as_django_stores_them() -> None:
    from django.db import connection

    for value in (timezone.now(), timezone.now().replace(microsecond=0)):
        local = value.astimezone(timezone.get_fixed_timezone(120))
        if connection.vendor == "sqlite":
            assert trips._sqlite_datetime(local) == connection.ops.adapt_datetimefield_value(value)
        assert trips._sqlite_datetime(local) == str(value.replace(tzinfo=None))
