"""The derive process on spare CPU (lensrelay.docstore.spare_cpu): the idle scheduling class while it keeps
up, the normal class at its nice level while it is behind, and the follower telling it how far behind."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore import spare_cpu
from lensrelay.docstore.derived import derive_pending, follower_for
from lensrelay.docstore.spare_cpu import SpareCpu, next_pass_in
from lensrelay.docstore.store import DocStore
from lensrelay.models import YUpdate
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create

T = TypeVar("T")


def on_a_thread(work: Callable[[], T]) -> T:
    """Run `work` on a thread of its own: a thread's class and nice value are its own, and this test's
    thread keeps its own."""
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(work()))
    thread.start()
    thread.join()
    return result[0]


def scheduling() -> tuple[int, int]:
    return os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_it_runs_idle_hurries_when_behind_and_rests_again_once_caught_up() -> None:
    # CI runs as root, where leaving the idle class is allowed: this must not quietly test nothing.
    assert spare_cpu.idle_class_can_be_left(nice=10)
    before = scheduling()

    def life() -> list[tuple[int, int]]:
        spare = SpareCpu(nice=10, idle=True, stretch=3.0)
        seen = [scheduling()]
        spare.lower()
        seen.append(scheduling())
        spare.behind(1.0)  # within the stretch: still idle
        seen.append(scheduling())
        spare.behind(4.0)
        seen.append(scheduling())
        spare.behind(5.0)  # still behind: nothing changes, no second hurry counted
        spare.behind(0.0)
        seen.append(scheduling())
        assert spare.hurries == 1
        return seen

    start, lowered, within, hurried, rested = on_a_thread(life)
    niced = start[1] + 10
    assert lowered == (os.SCHED_IDLE, niced)
    assert within == (os.SCHED_IDLE, niced)
    assert hurried == (os.SCHED_OTHER, niced)  # the normal class, but still below the server
    assert rested == (os.SCHED_IDLE, niced)
    assert scheduling() == before  # the test's thread is untouched


def test_where_idle_could_not_be_left_it_stays_at_its_nice_level(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel refuses to leave the idle class without CAP_SYS_NICE: stand in for an unprivileged user.
    real = os.sched_setscheduler

    def unprivileged(pid: int, policy: int, param: Any) -> None:
        if policy != os.SCHED_IDLE and os.sched_getscheduler(pid) == os.SCHED_IDLE:
            raise PermissionError(1, "Operation not permitted")
        real(pid, policy, param)

    monkeypatch.setattr(os, "sched_setscheduler", unprivileged)
    assert not spare_cpu.idle_class_can_be_left(nice=10)

    def life() -> list[tuple[int, int]]:
        spare = SpareCpu(nice=10, idle=True, stretch=3.0)
        spare.lower()
        lowered = scheduling()
        spare.behind(60.0)
        return [lowered, scheduling()]

    start = scheduling()
    assert on_a_thread(life) == [(os.SCHED_OTHER, start[1] + 10)] * 2


def test_with_the_idle_class_off_only_the_nice_level_moves() -> None:
    start = scheduling()

    def life() -> tuple[int, int]:
        spare = SpareCpu(nice=5, idle=False, stretch=3.0)
        spare.lower()
        spare.behind(60.0)
        return scheduling()

    assert on_a_thread(life) == (os.SCHED_OTHER, start[1] + 5)


@pytest.mark.django_db(transaction=True)
async def test_each_pass_tells_how_old_its_oldest_unread_change_is(store: DocStore, settings: Any) -> None:
    settings.LENSRELAY_DERIVED_WORK = "process"
    folder = await store.db(folder_create, name="Behind")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="note\n")
    await derive_pending(store)
    follower = follower_for(store)
    told: list[float] = []
    follower.behind = told.append

    await follower.step()  # nothing new
    room = await store.get(note.doc_id)
    assert room is not None
    with room.transact():
        room.doc.get("contents", type=Text).insert(0, "late ")
    await room.flushed()

    def backdate() -> None:  # as if the derive process had been starved for 40 seconds
        newest = YUpdate.objects.filter(doc_id=note.doc_id).order_by("-id").first()
        assert newest is not None
        YUpdate.objects.filter(id=newest.id).update(created=timezone.now() - timedelta(seconds=40))

    await store.db(backdate)
    await follower.step()
    await follower.step()
    assert told[0] == 0.0
    assert 40.0 <= told[1] < 60.0
    assert told[2] < 40.0  # read: no longer behind


def test_passes_keep_the_poll_while_short_and_space_out_as_they_grow() -> None:
    assert next_pass_in(took=0.01, poll=0.5, stretch=3.0) == pytest.approx(0.49)
    # A pass of 0.05 s rests thirty-one times that before the next begins: busy at most a thirty-second of
    # the time.
    assert next_pass_in(took=0.05, poll=0.5, stretch=3.0) == pytest.approx(1.55)
    # Never past the stretch from this pass's start; a pass longer than that is followed at once.
    assert next_pass_in(took=0.4, poll=0.5, stretch=3.0) == pytest.approx(2.6)
    assert next_pass_in(took=5.0, poll=0.5, stretch=3.0) == 0.0
