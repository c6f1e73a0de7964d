"""The suggestion services on a live document store, driven by generated documents and edits: what is
written into the Y.Text keeps both views, every comment and every other suggestion, and deciding the new
suggestion in the live document gives exactly what deciding it in the text alone gives."""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from hypothesis import assume, given
from hypothesis import strategies as st
from pycrdt import Text

from lensrelay.docstore.texts import room_text
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.errors import SuggestionError
from suggestions.lifecycle import follow
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.markup.criticmarkup import mark_id, parse
from suggestions.markup.rewriting import ONLY_UNDOES, accepted_of, base_of
from suggestions.models import Suggestion
from tests.suggestions.engine_profiles import LIVE
from tests.suggestions.markup.test_rewriting_properties import (
    WORDS,
    comments,
    decide_one_by_one,
    document,
    plain,
)

pytestmark = pytest.mark.django_db(transaction=True)

_numbers = itertools.count()


@pytest.fixture
async def folder(make_folder: Any) -> Any:
    return await sync_to_async(make_folder)("Live")


@st.composite
def unique_edit(draw: st.DrawFn, view: str) -> EditSpec | None:
    """An old_string found exactly once in the view, and its replacement."""
    start = draw(st.integers(0, max(0, len(view) - 1)))
    for end in range(start + 1, len(view) + 1):
        if view.count(view[start:end]) == 1:
            new = draw(st.one_of(st.just(""), plain(), WORDS))
            return EditSpec(view[start:end], new)
    return None


@LIVE
@given(raw=document(), data=st.data(), accept=st.booleans())
async def test_live_edits_keep_the_invariants_and_decide_alone(
    store: Any, folder: Any, raw: str, data: st.DataObject, accept: bool
) -> None:
    view = accepted_of(raw)
    spec = data.draw(unique_edit(view))
    assume(spec is not None and spec.old_string != spec.new_string)
    assert spec is not None
    document = await document_create(store=store, folder=folder, path=f"/Doc {next(_numbers)}.md", text=raw)
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(document.doc_id)
    assert entry is not None
    try:
        outcome = await suggestion_propose_edits(
            store=store, entry=entry, proposer=Proposer(author="claude"), specs=[spec], tool="edit"
        )
    except SuggestionError as exc:
        assert str(exc).startswith(ONLY_UNDOES.split("{")[0]), str(exc)
        return
    room = await store.get(document.doc_id)
    after = room_text(room)
    assert accepted_of(after) == view.replace(spec.old_string, spec.new_string, 1)
    assert base_of(after) == base_of(raw)
    assert comments(after) == comments(raw)
    row = outcome.suggestion
    assert row is not None and [mark_id(m) for m in parse(after)].count(row.uid) >= 1
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=accept)
    assert decision.ok, decision.reason
    assert room_text(room) == decide_one_by_one(after, [(row.uid, accept)])
    stored = await sync_to_async(Suggestion.objects.get)(pk=row.pk)
    assert stored.status == ("accepted" if accept else "rejected")


async def test_a_person_typing_while_the_hold_is_taken_does_not_refuse_the_edit(
    store: Any, folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taking the hold awaits the database; a keystroke landing meanwhile must not make the edit's plan stale
    (in an assistants' storm most edits were refused with "Document changed while the suggestion was
    written")."""
    document = await document_create(store=store, folder=folder, path="/Typed.md", text="alpha beta\n")
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(document.doc_id)
    assert entry is not None
    room = await store.get(document.doc_id)
    loop = asyncio.get_running_loop()
    real_hold = follow._hold

    def slow_hold(ids: list[str]) -> Any:
        # On the database thread: the person's keystroke lands on the loop while the hold is taken.
        done = threading.Event()

        def type_key() -> None:
            with room.transact():
                room.doc.get("contents", type=Text).insert(0, "x")
            done.set()

        loop.call_soon_threadsafe(type_key)
        assert done.wait(5)
        return real_hold(ids)

    monkeypatch.setattr(follow, "_hold", slow_hold)
    outcome = await suggestion_propose_edits(
        store=store,
        entry=entry,
        proposer=Proposer(author="claude"),
        specs=[EditSpec("beta", "gamma")],
        tool="edit",
    )
    assert outcome.suggestion is not None
    assert accepted_of(room_text(room)) == "xalpha gamma\n"
