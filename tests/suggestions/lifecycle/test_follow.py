"""The editor follower on a replica the suggestion's markup has not reached yet."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Assoc, Doc, StickyIndex, Text

from lensrelay.docstore.offsets import byte_offset
from lensrelay.docstore.texts import room_text
from lensrelay.vault.documents import document_create
from suggestions.lifecycle.follow import outcome_in_text
from suggestions.models import Suggestion
from tests.suggestions.markup.test_rewriting_properties import decide_one_by_one
from tests.suggestions.test_admin import propose

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_row_that_arrives_before_its_markup_stays_undecided(store: Any, make_folder: Any) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="plain text")
    room = await store.get(note.doc_id)
    # The worker that proposed it has the markup; this replica has not received it yet.
    proposer: Doc[Any] = Doc()
    proposer.apply_update(room.state_update())
    ytext = proposer.get("contents", type=Text)
    ytext.insert(0, "{++new++}")
    start = StickyIndex.new(ytext, 0, Assoc.AFTER).to_json()
    suggestion = Suggestion(doc_id=note.doc_id, path="Lens/Note.md", hunks=[{"start": start, "new": "new"}])
    # It used to panic (pyo3's PanicException, a BaseException) and kill the follower's task.
    assert outcome_in_text(room, suggestion) is None


# pycrdt's sticky positions take and give UTF-8 byte offsets as the texts do, as long as they fall on an
# item's edge (inside an item it adds the bytes to the item's UTF-16 clock). A mark's start and end are the
# edges of the item its insertion made; these texts put accents and astral characters before it.
@pytest.mark.parametrize(
    "before",
    ["Café déjà vu. " * 5, "😀 emoji 😀. " * 5, "éééééééé " * 100, "😀😀😀😀 " * 100],
    ids=["accents", "astral", "many-accents", "many-astral"],
)
@pytest.mark.parametrize("accept", [True, False], ids=["accepted", "rejected"])
async def test_a_decision_after_non_ascii_text_is_read_from_the_text(
    store: Any, make_folder: Any, before: str, accept: bool
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text=f"{before}The end")
    row = await propose(store, note, ("end", "finish"))
    room = await store.get(note.doc_id)
    marked = room_text(room)
    decided = decide_one_by_one(marked, [(row.uid, accept)])
    # A person edits the markup away in the text, as the editor's inline buttons do: only the marks' span.
    start = next(i for i, (a, b) in enumerate(zip(marked, decided, strict=False)) if a != b)
    tail = 0  # the common suffix, not reaching into the changed span
    while tail < len(decided) - start and marked[-1 - tail] == decided[-1 - tail]:
        tail += 1
    ytext = room.doc.get("contents", type=Text)
    span = (byte_offset(marked, start), byte_offset(marked, len(marked) - tail))
    with room.doc.transaction():
        del ytext[span[0] : span[1]]
        ytext.insert(span[0], decided[start : len(decided) - tail])
    assert room_text(room) == decided == f"{before}The {'finish' if accept else 'end'}"
    assert outcome_in_text(room, row) == (
        Suggestion.Status.ACCEPTED if accept else Suggestion.Status.REJECTED
    )
