"""The start-up warm-up prepares the running loop's store and changes nothing."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from lensrelay.asgi import application
from lensrelay.docstore.store import _stores, get_store
from lensrelay.models import ApiToken, YDoc, YUpdate
from lensrelay.server.warmup import warm_up

pytestmark = pytest.mark.django_db(transaction=True)


async def test_warm_up_creates_the_loops_store_and_writes_nothing(caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, logger="lensrelay.server.warmup"):
        await warm_up(application)
    store = _stores.get(asyncio.get_running_loop())
    assert store is not None and store is get_store()
    assert not store.rooms
    assert not caplog.records
    assert await YDoc.objects.acount() == 0
    assert await YUpdate.objects.acount() == 0
    assert await ApiToken.objects.acount() == 0
    await store.close()


async def test_the_warm_up_connect_is_refused_like_an_unknown_token() -> None:
    from lensrelay.server.warmup import refused_connect

    sent = await refused_connect(application)
    assert [m["type"] for m in sent] == ["websocket.accept", "websocket.close"]
    assert sent[-1]["code"] == 4401
    assert await ApiToken.objects.acount() == 0
    store = _stores.get(asyncio.get_running_loop())
    if store is not None:
        assert not store.rooms
        await store.close()


async def test_warm_up_opens_the_loops_own_connections_and_registers_no_room(caplog: Any) -> None:
    from django.db import connection

    from lensrelay.sync.lookups import loop_lookups

    if connection.vendor != "sqlite":
        pytest.skip("the loop's own reads are for SQLite only")
    loop_lookups._drop()
    with caplog.at_level(logging.WARNING, logger="lensrelay.server.warmup"):
        await warm_up(application)
    assert not caplog.records
    store = get_store()
    assert store._loop_reader is not None and store._loop_reader._connection is not None
    assert (
        getattr(loop_lookups._sqlite._local, "kept", None) is not None
        and loop_lookups._statements is not None
    )
    assert not store.rooms and store._cursor is None  # nothing followed, nothing loaded
    await store.close()
