"""Session and read-mark services (mcp_tools.callers.sessions): what every worker sees through the
database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from mcp_tools.callers import sessions
from mcp_tools.models import McpSession, ReadMark

pytestmark = pytest.mark.django_db(transaction=True)


async def create(token_id: int | None = None, version: str = "2025-11-25") -> McpSession:
    return await sessions.asession_create(
        token_id=token_id,
        protocol_version=version,
        client_info={"name": "client", "version": "9"},
        client_capabilities={"sampling": {}},
    )


async def test_create_and_get_a_session() -> None:
    session = await create()
    found = await sessions.asession_get(session_id=session.id, token_id=None)
    assert found is not None
    assert (found.protocol_version, found.client_name, found.client_version) == ("2025-11-25", "client", "9")
    assert found.client_capabilities == {"sampling": {}}


async def test_session_ids_are_long_random_and_visible_ascii() -> None:
    ids = {(await create()).id for _ in range(5)}
    assert len(ids) == 5
    assert all(len(i) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in i) for i in ids)


async def test_get_refuses_unknown_ended_idle_and_foreign_sessions(settings: Any) -> None:
    settings.LENSRELAY_MCP_SESSION_IDLE_SECONDS = 100
    session = await create()
    assert await sessions.asession_get(session_id="nope", token_id=None) is None
    assert await sessions.asession_get(session_id=session.id, token_id=5) is None
    await McpSession.objects.filter(id=session.id).aupdate(
        last_seen_at=timezone.now() - timedelta(seconds=101)
    )
    assert await sessions.asession_get(session_id=session.id, token_id=None) is None
    other = await create()
    assert await sessions.asession_end(session_id=other.id) is True
    assert await sessions.asession_end(session_id=other.id) is False
    assert await sessions.asession_get(session_id=other.id, token_id=None) is None


async def test_get_marks_the_session_as_seen_but_not_on_every_call() -> None:
    session = await create()
    old = timezone.now() - timedelta(minutes=5)
    await McpSession.objects.filter(id=session.id).aupdate(last_seen_at=old)
    await sessions.asession_get(session_id=session.id, token_id=None)
    seen = (await McpSession.objects.aget(id=session.id)).last_seen_at
    assert seen > old
    await sessions.asession_get(session_id=session.id, token_id=None)
    assert (await McpSession.objects.aget(id=session.id)).last_seen_at == seen


async def test_log_level() -> None:
    session = await create()
    await sessions.asession_set_log_level(session_id=session.id, level="error")
    assert (await McpSession.objects.aget(id=session.id)).log_level == "error"
    with pytest.raises(ValueError):
        await sessions.asession_set_log_level(session_id=session.id, level="shouty")
    assert (await McpSession.objects.aget(id=session.id)).log_level == "error"


def test_stateless_session_key() -> None:
    assert (
        sessions.stateless_session_key(token_id=4, client_name="claude-code") == "token:4:client:claude-code"
    )
    assert sessions.stateless_session_key(token_id=None, client_name="x") == "token:anonymous:client:x"


# ------------------------------------------------------------------------------------------ read marks


async def test_read_marks_are_per_key_and_document() -> None:
    await sessions.arecord_read(session_key="s1", doc_id="doc-a")
    assert await sessions.ahas_read(session_key="s1", doc_id="doc-a") is True
    assert await sessions.ahas_read(session_key="s1", doc_id="doc-b") is False
    assert await sessions.ahas_read(session_key="s2", doc_id="doc-a") is False


async def test_reading_again_moves_the_mark_forward() -> None:
    await sessions.arecord_read(session_key="s1", doc_id="doc-a")
    first = await sessions.alast_read_at(session_key="s1", doc_id="doc-a")
    await ReadMark.objects.filter(session_key="s1").aupdate(read_at=timezone.now() - timedelta(minutes=3))
    await sessions.arecord_read(session_key="s1", doc_id="doc-a")
    second = await sessions.alast_read_at(session_key="s1", doc_id="doc-a")
    assert first is not None and second is not None and second >= first
    assert await ReadMark.objects.acount() == 1


async def test_read_marks_expire_with_the_idle_timeout(settings: Any) -> None:
    settings.LENSRELAY_MCP_SESSION_IDLE_SECONDS = 60
    await sessions.arecord_read(session_key="s1", doc_id="doc-a")
    await ReadMark.objects.filter(session_key="s1").aupdate(read_at=timezone.now() - timedelta(seconds=61))
    assert await sessions.ahas_read(session_key="s1", doc_id="doc-a") is False


def test_sync_twins_work_outside_the_event_loop() -> None:
    sessions.record_read(session_key="k", doc_id="d")
    assert sessions.has_read(session_key="k", doc_id="d") is True
    assert sessions.last_read_at(session_key="k", doc_id="nope") is None


async def test_purge_removes_ended_and_idle_sessions_and_stale_marks(settings: Any) -> None:
    settings.LENSRELAY_MCP_SESSION_IDLE_SECONDS = 60
    live, ended, idle = await create(), await create(), await create()
    await sessions.asession_end(session_id=ended.id)
    long_ago = timezone.now() - timedelta(seconds=120)
    await McpSession.objects.filter(id=idle.id).aupdate(last_seen_at=long_ago)
    await sessions.arecord_read(session_key="fresh", doc_id="d")
    await sessions.arecord_read(session_key="stale", doc_id="d")
    await ReadMark.objects.filter(session_key="stale").aupdate(read_at=long_ago)
    removed = await sync_to_async(sessions.purge_stale)()
    assert removed == 3
    assert [s.id async for s in McpSession.objects.all()] == [live.id]
    assert [m.session_key async for m in ReadMark.objects.all()] == ["fresh"]
