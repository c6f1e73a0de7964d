"""The editor follower on a replica the suggestion's markup has not reached yet."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Assoc, Doc, StickyIndex, Text

from lensrelay.vault.documents import document_create
from suggestions.follow import outcome_in_text
from suggestions.models import Suggestion

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
