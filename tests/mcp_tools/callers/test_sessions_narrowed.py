"""A token that loses rights loses its MCP sessions and read marks at once (mcp_tools.callers.sessions)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from lensrelay.access.tokens import token_create, token_revoke, token_set_folders
from lensrelay.models import ApiToken, Folder
from mcp_tools.callers import sessions
from mcp_tools.models import McpSession, ReadMark

pytestmark = pytest.mark.django_db(transaction=True)


async def open_session(token_id: int) -> McpSession:
    session = await sessions.asession_create(
        token_id=token_id, protocol_version="2025-11-25", client_info={"name": "c"}, client_capabilities={}
    )
    await sessions.arecord_read(session_key=session.id, doc_id="doc-1")
    stateless = sessions.stateless_session_key(token_id=token_id, client_name="c")
    await sessions.arecord_read(session_key=stateless, doc_id="doc-1")
    return session


def setup() -> tuple[ApiToken, ApiToken, Folder]:
    a, b = Folder.objects.create(name="A"), Folder.objects.create(name="B")
    narrowed, _ = token_create(name="narrowed", role="suggest", folders=[a, b])
    bystander, _ = token_create(name="bystander", role="suggest", folders=[a, b])
    return narrowed, bystander, a


@pytest.mark.parametrize("change", ["narrow", "revoke"])
async def test_losing_rights_ends_the_tokens_sessions_and_read_marks_only(change: str) -> None:
    narrowed, bystander, a = await sync_to_async(setup)()
    mine = await open_session(narrowed.pk)
    theirs = await open_session(bystander.pk)

    if change == "narrow":
        await sync_to_async(token_set_folders)(token=narrowed, folders=[a])
    else:
        await sync_to_async(token_revoke)(token=narrowed)

    assert await sessions.asession_get(session_id=mine.id, token_id=narrowed.pk) is None
    assert await sessions.asession_get(session_id=theirs.id, token_id=bystander.pk) is not None
    keys = {key async for key in ReadMark.objects.values_list("session_key", flat=True)}
    assert keys == {theirs.id, f"token:{bystander.pk}:client:c"}


async def test_widening_keeps_the_sessions() -> None:
    narrowed, _, _ = await sync_to_async(setup)()
    session = await open_session(narrowed.pk)
    await sync_to_async(token_set_folders)(token=narrowed, folders=[])  # every folder: wider
    assert await sessions.asession_get(session_id=session.id, token_id=narrowed.pk) is not None
    assert await ReadMark.objects.acount() == 2
