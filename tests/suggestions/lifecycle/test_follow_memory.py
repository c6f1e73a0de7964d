"""The follower's memory of which documents have pending suggestions: no query for a note without any,
and rows another process wrote are found on the next refresh, their markup looked at once more."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Text

from lensrelay.docstore.offsets import text_delete, text_insert, text_replace
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle import follow
from suggestions.lifecycle.follow import pending_docs
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.markup.criticmarkup import accept_edits, own_changes
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)


async def rewrite(room: Any, text: str) -> None:
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_replace(ytext, current=str(ytext), start=0, end=len(str(ytext)), value=text)


async def status_of(pk: int, want: str, *, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        status = await sync_to_async(lambda: Suggestion.objects.get(pk=pk).status)()
        if status == want or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.05)


async def test_rows_written_elsewhere_are_followed_after_the_next_refresh(
    store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="hello world\n")
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(note.doc_id)
    assert entry is not None
    outcome = await suggestion_propose_edits(
        store=store,
        entry=entry,
        proposer=Proposer(author="claude"),
        specs=[EditSpec(old_string="world", new_string="there")],
        tool="edit",
    )
    row = outcome.suggestion
    assert row is not None
    # As if this process had read the pending documents just before another process wrote the row.
    memory = pending_docs(store)
    memory.doc_ids = frozenset()
    memory._read_at = time.monotonic()
    memory._generation = follow._generation
    room = await store.get(note.doc_id)
    # An editor rewrites the whole note: the markup is gone, and with it the text the hunks were anchored to.
    await rewrite(room, "hello there\n")
    # Not before the memory is refreshed (it says: nothing pending here)...
    assert await status_of(row.pk, "stale", timeout=follow.DEBOUNCE_SECONDS + 0.2) == "pending"
    # ...and then without another edit: the refresh finds the row and looks at the text again.
    assert await status_of(row.pk, "stale", timeout=follow.PENDING_REFRESH_SECONDS + 2.0) == "stale"


async def test_a_note_without_pending_suggestions_costs_no_query(store: Any, make_folder: Any) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Plain.md", text="plain\n")
    room = await store.get(note.doc_id)
    memory = pending_docs(store)
    assert note.doc_id not in await memory.current()
    calls = 0
    real = follow.pending_and_holds

    def counting(doc_ids: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(doc_ids)

    follow.pending_and_holds = counting  # type: ignore[assignment]
    try:
        for n in range(20):
            await rewrite(room, f"plain {n}\n")
        await asyncio.sleep(follow.DEBOUNCE_SECONDS * 3)
    finally:
        follow.pending_and_holds = real  # type: ignore[assignment]
    assert calls == 0


async def test_a_note_with_many_pending_suggestions_is_parsed_once_per_look(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    text = "".join(f"Line {n}: word{n} stays.\n" for n in range(40))
    note = await document_create(store=store, folder=folder, path="/Many.md", text=text)
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(note.doc_id)
    assert entry is not None
    rows = []
    for n in range(40):
        outcome = await suggestion_propose_edits(
            store=store,
            entry=entry,
            proposer=Proposer(author="claude"),
            specs=[EditSpec(old_string=f"word{n} stays", new_string=f"word{n} goes")],
            tool="edit",
        )
        assert outcome.suggestion is not None
        rows.append(outcome.suggestion)
    await follow.follower_for(store).settled()
    parses = 0
    real = follow.parse_changes

    def counted(raw: str) -> Any:
        nonlocal parses
        parses += 1
        return real(raw)

    monkeypatch.setattr(follow, "parse_changes", counted)
    room = await store.get(note.doc_id)
    ytext = room.doc.get("contents", type=Text)
    # A person accepts the first suggestion by hand and types inside the second's markup.
    raw = str(ytext)
    [first] = own_changes(raw, rows[0].uid)
    with room.transact():
        current = raw
        for span in sorted(accept_edits(raw, first), key=lambda s: s.start, reverse=True):
            text_delete(ytext, current=current, start=span.start, end=span.end)
            current = current[: span.start] + current[span.end :]
        [second] = own_changes(current, rows[1].uid)
        text_insert(ytext, current=current, index=current.index("goes", second.start) + 1, value="-")
    assert await status_of(rows[0].pk, "accepted", timeout=follow.DEBOUNCE_SECONDS + 2.0) == "accepted"
    await follow.follower_for(store).settled()
    assert await status_of(rows[1].pk, "stale", timeout=1.0) == "stale"
    statuses = await sync_to_async(
        lambda: list(
            Suggestion.objects.filter(pk__in=[r.pk for r in rows[2:]]).values_list("status", flat=True)
        )
    )()
    assert set(statuses) == {"pending"}
    # One parse per look at the note (a second look may follow a memory refresh), not one per row: 38 a look.
    assert 1 <= parses <= 2
