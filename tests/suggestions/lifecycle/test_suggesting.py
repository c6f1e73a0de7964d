"""Rows of what people type in suggesting mode: made for their marks, kept in step as they type on, never
taken over from someone else's row."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from pycrdt import Text

from lensrelay.docstore.offsets import byte_offset
from lensrelay.docstore.texts import room_text
from lensrelay.sync.suggesting import Person
from lensrelay.vault.documents import document_create
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.follow import look
from suggestions.lifecycle.suggesting import person_rows_in_step
from suggestions.models import Suggestion
from tests.suggestions.test_admin import propose

pytestmark = pytest.mark.django_db(transaction=True)

UID = "0123456789abcdef"


def meta(user: User, uid: str = UID) -> str:
    fields = {"author": user.get_username(), "timestamp": 1700000000000, "id": uid, "user": user.pk}
    return json.dumps(fields, separators=(",", ":")) + "@@"


async def type_after(room: Any, anchor: str, value: str) -> None:
    ytext = room.doc.get("contents", type=Text)
    raw = str(ytext)
    with room.transact():
        ytext.insert(byte_offset(raw, raw.index(anchor) + len(anchor)), value)
    await room.flushed()


@pytest.fixture
async def sam(transactional_db: None) -> User:
    return await sync_to_async(User.objects.create_user)("sam", is_staff=True)


async def test_a_persons_mark_gets_a_row_that_follows_their_typing(
    store: Any, make_folder: Any, sam: User
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(
        store=store, folder=folder, path="/Note.md", text=f"The fox{{++{meta(sam)} brown++}} jumps."
    )
    room = await store.get(note.doc_id)
    person = Person(user_id=sam.pk, username="sam")
    await person_rows_in_step(room=room, person=person)
    row = await Suggestion.objects.aget(uid=UID)
    assert (row.person_id, row.author, row.kind, row.status, row.new_text) == (
        sam.pk,
        "sam",
        "edit",
        "pending",
        " brown",
    )

    # They typed on inside it, and the follower looked before their row caught up: not stale, caught up.
    await type_after(room, " brown", "ish")
    assert await look(store, [note.doc_id]) == set()
    await row.arefresh_from_db()
    assert (row.status, row.new_text, [h["new"] for h in row.hunks]) == (
        "pending",
        " brownish",
        [" brownish"],
    )

    # A reviewer deciding while the row is behind is asked to wait; nothing changes.
    await type_after(room, " brownish", " red")
    rita = await sync_to_async(User.objects.create_superuser)("rita", "r@example.org", "pw")
    decision = await suggestion_decide(store=store, suggestion=row, user=rita, accept=True)
    assert not decision.ok and "sam is still typing" in decision.reason
    await row.arefresh_from_db()
    assert row.status == "pending" and "{++" in room_text(room)

    # Once caught up, it is decided like any suggestion.
    await person_rows_in_step(room=room, person=person)
    await row.arefresh_from_db()
    decision = await suggestion_decide(store=store, suggestion=row, user=rita, accept=True)
    assert decision.ok, decision.reason
    assert room_text(room) == "The fox brownish red jumps."


async def test_another_rows_id_is_never_taken_over(store: Any, make_folder: Any, sam: User) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="The end. Quick.")
    assistant = await propose(store, note, ("end", "finish"))
    room = await store.get(note.doc_id)
    # A mark carrying the assistant row's id but tagged as sam's (written by someone editing live).
    await type_after(room, "Quick.", f"{{++{meta(sam, assistant.uid)}x++}}")
    await person_rows_in_step(room=room, person=Person(user_id=sam.pk, username="sam"))
    await assistant.arefresh_from_db()
    assert assistant.person_id is None and assistant.author != "sam"
    assert await Suggestion.objects.acount() == 1
