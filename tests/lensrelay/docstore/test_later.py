"""Later handles each document once per delay, even while it keeps changing; Spaced each at most once per
interval, its last change always."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lensrelay.docstore.later import SPACED_SLACK, Later, Spaced


@pytest.mark.django_db(transaction=True)
async def test_a_document_changed_during_its_handling_waits_the_delay_again(store: Any) -> None:
    loop = asyncio.get_running_loop()
    handled: list[float] = []
    later: Later

    async def handle(doc_id: str) -> None:
        handled.append(loop.time())
        if len(handled) < 3:
            later.add(doc_id)  # changed again while it was being handled
        await asyncio.sleep(0)

    later = Later(store, handle, delay=lambda: 0.05)
    started = loop.time()
    later.add("doc")
    await later.settled()
    assert len(handled) == 3
    gaps = [b - a for a, b in zip([started, *handled], handled, strict=False)]
    assert all(gap >= 0.045 for gap in gaps), gaps  # not back to back


@pytest.mark.django_db(transaction=True)
async def test_discard_forgets_an_id_of_the_round_being_handled(store: Any) -> None:
    handled: list[str] = []
    later: Later

    async def handle(doc_id: str) -> None:
        handled.append(doc_id)
        later.discard("b" if doc_id == "a" else "a")

    later = Later(store, handle, delay=lambda: 0.0)
    later.add("a")
    later.add("b")
    await later.settled()
    assert len(handled) == 1


@pytest.mark.django_db(transaction=True)
async def test_spaced_handles_a_document_at_most_once_per_interval_and_always_its_last_change(
    store: Any,
) -> None:
    """A note typed into on every pass is handled once per interval, one changed once at once, and what
    waits is handled when its time comes without another call."""
    loop = asyncio.get_running_loop()
    rounds: list[tuple[float, frozenset[str]]] = []

    async def handle(doc_ids: frozenset[str]) -> None:
        rounds.append((loop.time(), doc_ids))

    spaced = Spaced(store, handle, spacing=lambda: 0.3)
    started = loop.time()
    await spaced.add(["typed", "once"])
    await spaced.add(["typed"])  # again at once: it waits
    await spaced.add(["typed", "other"])  # "other" is new: handled now, "typed" still waits
    assert [ids for _, ids in rounds] == [frozenset({"typed", "once"}), frozenset({"other"})]
    assert spaced.waiting == {"typed"}
    await spaced.settled()
    assert [ids for _, ids in rounds][2:] == [frozenset({"typed"})]
    assert rounds[2][0] - started >= 0.3 - SPACED_SLACK
    assert not spaced.waiting
    # Past the interval a change is handled at once again.
    await asyncio.sleep(0.35)
    await spaced.add(["typed"])
    assert rounds[-1][1] == frozenset({"typed"}) and len(rounds) == 4


@pytest.mark.django_db(transaction=True)
async def test_spaced_flush_handles_what_waits_now_and_a_failure_does_not_stop_it(store: Any) -> None:
    handled: list[frozenset[str]] = []

    async def handle(doc_ids: frozenset[str]) -> None:
        handled.append(doc_ids)
        if "bad" in doc_ids and len(handled) == 1:
            raise RuntimeError("a handler failed")

    spaced = Spaced(store, handle, spacing=lambda: 3600.0)
    await spaced.add(["bad"])  # fails: logged, and the document counts as handled
    await spaced.add(["bad", "good"])
    assert handled == [frozenset({"bad"}), frozenset({"good"})]
    assert spaced.waiting == {"bad"}
    await spaced.flush()  # an hour early: a process about to stop
    assert handled[-1] == frozenset({"bad"}) and not spaced.waiting
