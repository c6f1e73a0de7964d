"""Later handles each document once per delay, even while it keeps changing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lensrelay.docstore.later import Later


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
