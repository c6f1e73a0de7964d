"""`resources/updated` is a derived view: the derive process's pass tells each subscribed, listening session
once per changed note (a burst is one event), with one query for a batch nobody subscribed to, and nothing
to a session whose token cannot see the note, was revoked, or whose session ended. Inline (no derive
process) the server tells its own edits after the debounce window, once per window."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from pycrdt import Text

from lensrelay.access.tokens import token_create, token_revoke
from lensrelay.docstore.derived import derive_pending
from lensrelay.docstore.offsets import text_replace
from lensrelay.models import ApiToken
from lensrelay.vault.documents import document_create
from mcp_tools.models import McpSession, McpSubscription
from mcp_tools.notifications import produce
from mcp_tools.notifications.produce import documents_changed_events
from tests.mcp_tools.notifications.logged import logged_params
from tests.mcp_tools.notifications.test_produce import listening

pytestmark = pytest.mark.django_db(transaction=True)


async def rewrite(room: Any, text: str) -> None:
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_replace(ytext, current=str(ytext), start=0, end=len(str(ytext)), value=text)


def updated_events(session_id: str) -> list[str]:
    return [params["uri"] for params in logged_params(session_id, "notifications/resources/updated")]


def subscribe(session_id: str, uri: str, doc_id: str) -> None:
    McpSubscription.objects.create(session_id=session_id, uri=uri, doc_id=doc_id)


def with_token(session_id: str, raw: str) -> None:
    token = ApiToken.objects.get(token_hash=ApiToken.hash_token(raw))
    McpSession.objects.filter(pk=session_id).update(token=token)


async def test_a_burst_is_one_event_per_session_from_the_pass_and_none_on_the_live_path(
    store: Any, make_folder: Any, settings: Any
) -> None:
    settings.LENSRELAY_DERIVED_WORK = "process"
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="one\n")
    other = await document_create(store=store, folder=folder, path="/Other.md", text="one\n")
    await derive_pending(store)
    first, second = await sync_to_async(listening)("first"), await sync_to_async(listening)("second")
    for session in (first, second):
        await sync_to_async(subscribe)(session, "lens://Lens/Note.md", note.doc_id)
    await sync_to_async(subscribe)(first, "lens://Lens/Other.md", other.doc_id)
    room, other_room = await store.get(note.doc_id), await store.get(other.doc_id)
    for n in range(30):
        await rewrite(room, f"edit {n}\n")
    await rewrite(other_room, "two\n")
    await room.flushed()
    await other_room.flushed()
    await asyncio.sleep(produce.DEBOUNCE_SECONDS * 3)  # longer than the inline window: nothing ran here
    assert await sync_to_async(updated_events)(first) == []

    await derive_pending(store)
    assert sorted(await sync_to_async(updated_events)(first)) == [
        "lens://Lens/Note.md",
        "lens://Lens/Other.md",
    ]
    assert await sync_to_async(updated_events)(second) == ["lens://Lens/Note.md"]
    # A pass that read nothing new tells nothing.
    await derive_pending(store)
    assert len(await sync_to_async(updated_events)(first)) == 2
    # The next edit is the next event.
    await rewrite(room, "again\n")
    await room.flushed()
    await derive_pending(store)
    assert await sync_to_async(updated_events)(second) == ["lens://Lens/Note.md"] * 2


def test_a_batch_nobody_subscribed_to_costs_one_query() -> None:
    listening("elsewhere")
    McpSubscription.objects.create(session_id="elsewhere", uri="lens://Lens/X.md", doc_id="doc-x")
    with CaptureQueriesContext(connection) as queries:
        assert documents_changed_events(doc_ids={f"doc-{n}" for n in range(400)}) == 0
    assert len(queries.captured_queries) == 1
    # Past one chunk: one query per chunk, still nothing per note.
    with CaptureQueriesContext(connection) as queries:
        assert documents_changed_events(doc_ids={f"doc-{n}" for n in range(1200)}) == 0
    assert len(queries.captured_queries) == 3


def test_only_sessions_that_may_see_the_note_now_are_told(make_folder: Any) -> None:
    seen, hidden = make_folder("Seen"), make_folder("Hidden")
    from lensrelay.models import Document

    Document.objects.create(doc_id="doc-hidden", uuid="u-hidden", folder=hidden, path="/Secret.md")
    Document.objects.create(doc_id="doc-seen", uuid="u-seen", folder=seen, path="/Open.md")
    _, narrow_raw = token_create(name="narrow", role="view", folders=[seen])
    _, revoked_raw = token_create(name="revoked", role="view", folders=[])
    everyone = listening("everyone")
    narrow = listening("narrow")
    with_token(narrow, narrow_raw)
    revoked = listening("revoked")
    with_token(revoked, revoked_raw)
    token_revoke(token=ApiToken.objects.get(token_hash=ApiToken.hash_token(revoked_raw)))
    ended = listening("ended")
    McpSession.objects.filter(pk=ended).update(ended_at=timezone.now())
    now = timezone.now()
    McpSession.objects.create(id="deaf", protocol_version="2025-06-18", created_at=now, last_seen_at=now)
    for session in (everyone, narrow, revoked, ended, "deaf"):
        subscribe(session, "lens://Hidden/Secret.md", "doc-hidden")
        subscribe(session, "lens://Seen/Open.md", "doc-seen")

    assert documents_changed_events(doc_ids={"doc-hidden", "doc-seen"}) == 3
    assert sorted(updated_events(everyone)) == ["lens://Hidden/Secret.md", "lens://Seen/Open.md"]
    assert updated_events(narrow) == ["lens://Seen/Open.md"]
    for session in (revoked, ended, "deaf"):
        assert updated_events(session) == [], session


async def test_inline_the_server_tells_its_own_edits_once_per_window(
    store: Any, make_folder: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.LENSRELAY_DERIVED_WORK = "inline"
    woken: list[bool] = []
    monkeypatch.setattr(produce, "wake_all", lambda: woken.append(True))
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="one\n")
    session = await sync_to_async(listening)("inline")
    await sync_to_async(subscribe)(session, "lens://Lens/Note.md", note.doc_id)
    room = await store.get(note.doc_id)
    for n in range(20):
        await rewrite(room, f"edit {n}\n")
    await produce.inline_notifier(store).settled()
    assert await sync_to_async(updated_events)(session) == ["lens://Lens/Note.md"]
    assert woken == [True]  # the streams of this process are told at once
