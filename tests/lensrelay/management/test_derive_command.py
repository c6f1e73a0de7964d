"""`manage.py derive` stops when asked, and ends itself if its pass does not finish in time."""

from __future__ import annotations

import asyncio
import os

import pytest

from lensrelay.management.commands import derive


def test_a_stop_the_pass_does_not_finish_in_time_ends_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    stop = asyncio.Event()
    deadline = derive.stop_soon(stop, grace=0.05)
    assert stop.is_set() and deadline.daemon
    deadline.join(5)
    assert exits == [1]
