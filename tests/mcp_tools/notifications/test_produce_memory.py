"""Who is subscribed is answered from memory: an edit of a note nobody subscribed to makes no query, and a
subscription another worker made is heard after the next refresh, the change that came before it too."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Text

from lensrelay.docstore.offsets import text_replace
from lensrelay.vault.documents import document_create
from mcp_tools.models import McpEvent, McpSubscription
from mcp_tools.notifications import produce
from mcp_tools.notifications.produce import subscribed_docs
from mcp_tools.notifications.subscriptions import subscriptions_generation
from tests.mcp_tools.notifications.test_produce import listening

pytestmark = pytest.mark.django_db(transaction=True)


async def rewrite(room: Any, text: str) -> None:
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_replace(ytext, current=str(ytext), start=0, end=len(str(ytext)), value=text)


def updated_events(session_id: str) -> list[str]:
    return [
        message["params"]["uri"]
        for message in McpEvent.objects.filter(session_id=session_id).values_list("message", flat=True)
        if message.get("method") == "notifications/resources/updated"
    ]


async def test_a_subscription_made_on_another_worker_is_heard_after_the_next_refresh(
    store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="one\n")
    room = await store.get(note.doc_id)
    memory = subscribed_docs(store)
    assert note.doc_id not in await memory.current()
    # Another worker subscribes (its own memory is told; this one's is not).
    session = await sync_to_async(listening)("elsewhere")
    uri = "lens://Lens/Note.md"
    await sync_to_async(McpSubscription.objects.create)(session_id=session, uri=uri, doc_id=note.doc_id)
    memory._read_at = time.monotonic()  # as if read just before it
    memory._generation = subscriptions_generation()
    await rewrite(room, "two\n")
    deadline = time.monotonic() + produce.SUBSCRIBED_REFRESH_SECONDS + 3.0
    found: list[str] = []
    while time.monotonic() < deadline and not found:
        await asyncio.sleep(0.1)
        found = await sync_to_async(updated_events)(session)
    assert found == [uri]


async def test_edits_of_a_note_nobody_subscribed_to_make_no_query(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Plain.md", text="one\n")
    room = await store.get(note.doc_id)
    assert note.doc_id not in await subscribed_docs(store).current()
    calls: list[str] = []
    monkeypatch.setattr(produce, "document_changed_events", lambda *, doc_id: calls.append(doc_id) or 0)
    for n in range(30):
        await rewrite(room, f"edit {n}\n")
    await asyncio.sleep(produce.DEBOUNCE_SECONDS * 3)
    assert calls == []
