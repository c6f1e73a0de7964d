"""The start-up warm-up prepares the running loop's store and changes nothing."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from lensrelay.docstore.store import _stores, get_store
from lensrelay.models import ApiToken, YDoc, YUpdate
from lensrelay.sync.warmup import warm_up

pytestmark = pytest.mark.django_db(transaction=True)


async def test_warm_up_creates_the_loops_store_and_writes_nothing(caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, logger="lensrelay.sync.warmup"):
        await warm_up()
    store = _stores.get(asyncio.get_running_loop())
    assert store is not None and store is get_store()
    assert not store.rooms
    assert not caplog.records
    assert await YDoc.objects.acount() == 0
    assert await YUpdate.objects.acount() == 0
    assert await ApiToken.objects.acount() == 0
    await store.close()
