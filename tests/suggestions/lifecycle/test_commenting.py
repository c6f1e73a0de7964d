"""The thread services and the rows that index the text: webhooks told once per comment, comments typed by
hand get rows, a thread copied into another note stays its own, and an export re-imported keeps every
comment, a thread whose markup was deleted included (detached)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.docstore.derived import derive_pending
from lensrelay.docstore.texts import text_cache
from lensrelay.vault.documents import document_create
from lensrelay.vault.importexport import export_vault, import_vault
from lensrelay.vault.paths import path_index
from lensrelay.webhooks.models import WebhookEndpoint, WebhookEvent
from suggestions.lifecycle.commenting import (
    Commenter,
    status_set,
    thread_reply,
    thread_resolve,
    thread_start,
    threads_index,
    threads_index_many,
)
from suggestions.markup.threads import thread_marks
from suggestions.models import Thread, ThreadComment

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "# Plan\n\nWe ship on Friday. Then we rest.\n"
ANA = Commenter(author="ana")
CLAUDE = Commenter(author="claude")


async def entry_of(store: Any, doc_id: str) -> Any:
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(doc_id)
    assert entry is not None
    return entry


@pytest.fixture
async def plan(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Team")
    return await document_create(store=store, folder=folder, path="/Plan.md", text=TEXT)


def events(type: str) -> list[dict[str, Any]]:
    return [e.data for e in WebhookEvent.objects.filter(type=type).order_by("id")]


async def test_webhooks_tell_each_comment_once_and_the_resolution(store: Any, plan: Any) -> None:
    await sync_to_async(WebhookEndpoint.objects.create)(
        name="all", url="https://hooks.example/", all_folders=True
    )
    entry = await entry_of(store, plan.doc_id)
    thread = await thread_start(store=store, entry=entry, commenter=ANA, passage="on Friday", body="Sure?")
    await thread_reply(store=store, thread=thread, commenter=CLAUDE, body="Yes, @ana.")
    # The derived view indexing the same text later makes no second row nor event.
    await sync_to_async(threads_index)(entry=entry, raw=await text_cache(store).get(plan.doc_id))
    created = await sync_to_async(events)("comment.created")
    assert [e["comment"]["body"] for e in created] == ["Sure?", "Yes, @ana."]
    assert created[0]["thread"] | {"created": None} == {
        "id": thread.uid,
        "doc_id": plan.doc_id,
        "folder_id": entry.folder_id,
        "path": "Team/Plan.md",
        "passage": "on Friday",
        "text_truncated": False,
        "suggestion": None,
        "status": "open",
        "detached": False,
        "author": "ana",
        "created": None,
    }
    await thread_resolve(store=store, thread=thread, commenter=ANA, resolved=True)
    # The indexer reading the resolved text, before or after the service's own row update: told once.
    await sync_to_async(threads_index)(entry=entry, raw=await text_cache(store).get(plan.doc_id))
    assert not await sync_to_async(status_set)(thread, status="resolved", by="ana")
    (resolved,) = await sync_to_async(events)("comment.resolved")
    assert resolved["thread"]["status"] == "resolved" and resolved["resolved"]["by"] == "ana"


async def test_comments_typed_by_hand_get_rows_and_a_copied_thread_stays_its_notes(
    store: Any, plan: Any, make_folder: Any
) -> None:
    entry = await entry_of(store, plan.doc_id)
    thread = await thread_start(store=store, entry=entry, commenter=ANA, passage="we rest", body="Long?")
    raw = await text_cache(store).get(plan.doc_id)
    meta = (
        f'{{"author":"ben","timestamp":1700000000000,"thread":"{thread.uid}","comment":"b0b0b0b0b0b0b0b0"}}@@'
    )
    typed = raw.replace("Long?<<}", "Long?<<}{>>" + meta + "A week.<<}")
    await sync_to_async(threads_index)(entry=entry, raw=typed)
    bodies = await sync_to_async(lambda: sorted((c.author, c.body) for c in ThreadComment.objects.all()))()
    assert bodies == [("ana", "Long?"), ("ben", "A week.")]
    # The same thread pasted into another note: that note does not take it over.
    folder = await sync_to_async(make_folder)("Other")
    other = await document_create(store=store, folder=folder, path="/Copy.md", text=typed)
    await sync_to_async(threads_index)(entry=await entry_of(store, other.doc_id), raw=typed)
    assert await sync_to_async(Thread.objects.filter(doc_id=other.doc_id).count)() == 0
    assert (await sync_to_async(Thread.objects.get)(uid=thread.uid)).doc_id == plan.doc_id


async def test_an_export_reimported_keeps_every_comment(store: Any, plan: Any, tmp_path: Path) -> None:
    entry = await entry_of(store, plan.doc_id)
    kept = await thread_start(store=store, entry=entry, commenter=ANA, passage="on Friday", body="Sure?")
    await thread_reply(store=store, thread=kept, commenter=CLAUDE, body="Yes.")
    gone = await thread_start(store=store, entry=entry, commenter=CLAUDE, passage="we rest", body="How long?")
    await thread_resolve(store=store, thread=gone, commenter=CLAUDE, resolved=True)
    # A person deletes the second thread's passage with all its markup.
    room = await store.get(plan.doc_id)
    from pycrdt import Text

    ytext = room.doc.get("contents", type=Text)
    raw = str(ytext)
    found = next(t for t in thread_marks(raw) if t.thread_id == gone.uid)
    assert found.highlight is not None
    start, end = len(raw[: found.highlight.start].encode()), len(raw[: found.end].encode())
    with room.transact():
        del ytext[start:end]
    await sync_to_async(threads_index)(entry=entry, raw=str(ytext))
    assert (await sync_to_async(Thread.objects.get)(uid=gone.uid)).detached

    folder = await sync_to_async(lambda: plan.folder)()
    await sync_to_async(export_vault)(folder=folder, target=tmp_path)
    exported = (tmp_path / "Plan.md").read_text()
    assert "How long?" in exported and "Sure?" in exported and "Yes." in exported

    # A fresh server: no rows; importing the export makes them again, through the derived view (as the
    # derive process runs it on what the import logged).
    await sync_to_async(lambda: Thread.objects.all().delete())()
    await sync_to_async(folder.delete)()
    await import_vault(store=store, root=tmp_path, folder_name="Restored")
    await derive_pending(store)
    copies = await sync_to_async(lambda: list(Thread.objects.all()))()
    by_uid = {t.uid: t for t in copies}
    assert set(by_uid) == {kept.uid, gone.uid}
    assert not by_uid[kept.uid].detached and by_uid[kept.uid].passage == "on Friday"
    assert by_uid[gone.uid].detached and by_uid[gone.uid].status == "resolved"
    bodies = await sync_to_async(
        lambda: {t.uid: [c.body for c in t.comments.all()] for t in Thread.objects.all()}
    )()
    assert bodies[kept.uid] == ["Sure?", "Yes."] and bodies[gone.uid] == ["How long?"]


async def test_a_pass_indexes_only_notes_with_comments_or_threads(
    store: Any, plan: Any, make_folder: Any
) -> None:
    """The derive process's batch: a note whose text lost every comment still has its thread detached; a
    note with neither is left alone."""
    entry = await entry_of(store, plan.doc_id)
    thread = await thread_start(store=store, entry=entry, commenter=ANA, passage="on Friday", body="Sure?")
    folder = await sync_to_async(make_folder)("Quiet")
    quiet = await document_create(store=store, folder=folder, path="/Quiet.md", text="Nothing to say.\n")
    await sync_to_async(threads_index_many)(
        [(entry, TEXT), (await entry_of(store, quiet.doc_id), "Nothing.\n")]
    )
    assert (await sync_to_async(Thread.objects.get)(uid=thread.uid)).detached
    assert await sync_to_async(Thread.objects.filter(doc_id=quiet.doc_id).count)() == 0
