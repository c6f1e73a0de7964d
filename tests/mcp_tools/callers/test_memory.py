"""Tokens, sessions and read marks kept in a worker's memory never outlive a change made by another."""

from __future__ import annotations

import copy

import httpx
import pytest
from asgiref.sync import sync_to_async

from lensrelay.access.tokens import token_revoke, token_set_folders
from lensrelay.models import ApiToken
from mcp_tools.callers import memory, sessions
from mcp_tools.models import ReadMark
from tests.mcp_tools.test_transport_support import Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _as_another_worker(change: object) -> memory._Memory:
    """Run `change` (a callable) and give back what this worker kept before it: another worker, which
    never ran the change's signals, still holds exactly that."""
    kept = copy.copy(memory._memory)
    kept.tokens, kept.sessions, kept.marks = dict(kept.tokens), dict(kept.sessions), dict(kept.marks)
    change()  # type: ignore[operator]
    return kept


async def _in_use(http: httpx.AsyncClient, raw: str) -> tuple[Mcp, str, memory._Token]:
    """A session that has made a call, so this worker keeps its token; and what it keeps."""
    client = Mcp(http, raw)
    session = await client.initialize()
    assert (await client.request("ping", session=session)).status == 200
    kept = memory._memory.tokens[ApiToken.hash_token(raw)]  # the next call skips the lookup
    assert kept is not None
    return client, session, kept


async def test_a_token_revoked_by_another_worker_is_refused_on_the_next_request(
    http: httpx.AsyncClient, tokens: TokenFactory
) -> None:
    raw = await tokens("edit")
    client, session, _ = await _in_use(http, raw)

    def revoke() -> None:
        token_revoke(token=ApiToken.objects.get(token_hash=ApiToken.hash_token(raw)))

    stale = await sync_to_async(_as_another_worker)(revoke)
    memory._memory = stale  # this worker still holds the token as it was
    reply = await client.request("ping", session=session)
    assert reply.status == 401, reply


async def test_narrowed_folders_by_another_worker_reach_the_next_request(
    http: httpx.AsyncClient, tokens: TokenFactory
) -> None:
    raw = await tokens("view")
    client, session, kept = await _in_use(http, raw)
    assert kept.access.folder_ids is None

    def narrow() -> None:
        from lensrelay.models import Folder

        folder = Folder.objects.create(name="Only", doc_id="relay-only-folder")
        token_set_folders(token=ApiToken.objects.get(token_hash=ApiToken.hash_token(raw)), folders=[folder])

    memory._memory = await sync_to_async(_as_another_worker)(narrow)
    # The narrowing ended the session everywhere; a new one gets the token's new folders.
    assert (await client.request("ping", session=session)).status == 404
    again = await client.initialize()
    assert (await client.request("ping", session=again)).status == 200
    now = memory._memory.tokens[ApiToken.hash_token(raw)]
    assert now is not None and now.access.folder_ids is not None and len(now.access.folder_ids) == 1


async def test_a_read_mark_deleted_by_another_worker_is_written_again(store: object) -> None:
    await memory.refresh()
    await sessions.arecord_read_coarse(session_key="token:7:client:c", doc_id="doc-a")
    assert await sessions.ahas_read(session_key="token:7:client:c", doc_id="doc-a")

    def end_for_token() -> None:
        sessions.sessions_end_for_token(token_id=7)

    memory._memory = await sync_to_async(_as_another_worker)(end_for_token)
    assert not await sessions.ahas_read(session_key="token:7:client:c", doc_id="doc-a")
    await memory.refresh()  # what every request does first
    await sessions.arecord_read_coarse(session_key="token:7:client:c", doc_id="doc-a")
    assert await sessions.ahas_read(session_key="token:7:client:c", doc_id="doc-a")
    assert await ReadMark.objects.acount() == 1


async def test_a_read_mark_written_by_one_worker_is_seen_by_another(store: object) -> None:
    await memory.refresh()
    await sessions.arecord_read_coarse(session_key="s-shared", doc_id="doc-b")
    memory._memory = memory._Memory()  # a worker that kept nothing
    assert await sessions.ahas_read(session_key="s-shared", doc_id="doc-b")
