"""Background work survives pycrdt panics (pyo3's PanicException is a BaseException) and logs failures."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from pycrdt import Assoc, Doc, StickyIndex, Text

from lensrelay.docstore.later import Later
from lensrelay.docstore.panics import is_panic


def provoke_panic() -> None:
    """A position whose item this document never received makes pycrdt panic."""
    elsewhere: Doc[Any] = Doc()
    text = elsewhere.get("contents", type=Text)
    text.insert(0, "hello")
    position = StickyIndex.new(text, 2, Assoc.AFTER).to_json()
    here: Doc[Any] = Doc()
    StickyIndex.from_json(position, here.get("contents", type=Text)).get_index()


def test_the_panic_is_real_and_recognised() -> None:
    with pytest.raises(BaseException) as caught:
        provoke_panic()
    assert not isinstance(caught.value, Exception)
    assert is_panic(caught.value)
    assert not is_panic(asyncio.CancelledError())


@pytest.mark.django_db(transaction=True)
async def test_a_panicking_handler_is_logged_and_later_work_still_runs(store: Any, caplog: Any) -> None:
    handled: list[str] = []

    async def handle(doc_id: str) -> None:
        if doc_id == "bad":
            provoke_panic()
        handled.append(doc_id)

    later = Later(store, handle, delay=lambda: 0.0)
    with caplog.at_level(logging.ERROR, logger="lensrelay.docstore.later"):
        later.add("bad")
        await later.settled()
        later.add("good")
        await later.settled()
    assert handled == ["good"]
    assert any("pycrdt panic" in r.getMessage() for r in caplog.records)


@pytest.mark.django_db(transaction=True)
async def test_a_failed_background_task_is_logged_when_it_fails(store: Any, caplog: Any) -> None:
    async def fails() -> None:
        raise RuntimeError("database unavailable")

    with caplog.at_level(logging.ERROR, logger="lensrelay.docstore.store"):
        task = store.spawn(fails())
        await asyncio.wait([task])
        await asyncio.sleep(0)
    assert any("background task" in r.getMessage() for r in caplog.records)
