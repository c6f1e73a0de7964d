"""Each writer its own Yjs client id: a change made for an actor carries the actor's client id and
registers it in `users` (PermanentUserData's shape) once; two actors never share one; a write that fails
midway leaves the live Doc as it was and the next write starts clean; a write follows what others changed
meanwhile; without an actor the change stays the server's."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Array, Doc, Map, Text

from lensrelay.docstore.acting import Actor, acting_as
from lensrelay.docstore.writers import USERS, clients, writer_for
from lensrelay.models import YUpdate
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)

CLAUDE = Actor("token", "claude", token_id=3, client="Claude Code")
ADA = Actor("staff", "ada", user_id=1)


@pytest.fixture
async def room(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="start")
    return await store.get(note.doc_id)


def write(room: Any, at: int, text: str) -> None:
    with room.writing() as doc:
        doc.get("contents", type=Text).insert(at, text)


def users(room: Any) -> dict[str, list[float]]:
    found = room.doc.get(USERS, type=Map)
    return {name: list(entry["ids"]) for name, entry in found.items()}


async def test_an_actors_text_carries_its_own_client_id_registered_once(room: Any) -> None:
    claude, ada = writer_for(CLAUDE), writer_for(ADA)
    assert claude.client_id != ada.client_id and claude.name == "claude · Claude Code"
    assert writer_for(CLAUDE) == claude  # the same across calls in one process
    with acting_as(CLAUDE):
        write(room, 0, "one ")
        write(room, 0, "two ")
    with acting_as(ADA):
        write(room, 0, "three ")
    assert str(room.doc.get("contents", type=Text)) == "three two one start"
    assert {claude.client_id, ada.client_id} <= clients(room.doc.get_state())
    assert room.doc.client_id not in (claude.client_id, ada.client_id)
    assert users(room) == {"claude · Claude Code": [claude.client_id], "ada": [ada.client_id]}
    entry = room.doc.get(USERS, type=Map)["ada"]
    assert isinstance(entry["ids"], Array) and isinstance(entry["ds"], Array)
    await room.flushed()
    # the change is logged and named as any service's change
    authors = await room.store.db(
        lambda: list(YUpdate.objects.filter(doc_id=room.doc_id).values_list("author", flat=True))
    )
    assert "ada (staff), claude · Claude Code (token #3)" in authors  # one batch, both named


async def test_a_write_that_fails_midway_changes_nothing_and_the_next_starts_clean(room: Any) -> None:
    before = room.doc.get_update()
    with acting_as(CLAUDE), pytest.raises(RuntimeError, match="midway"), room.writing() as doc:
        doc.get("contents", type=Text).insert(0, "half ")
        raise RuntimeError("midway")
    assert room.doc.get_update() == before and users(room) == {}
    with acting_as(CLAUDE):
        write(room, 5, " whole")
    assert str(room.doc.get("contents", type=Text)) == "start whole"


async def test_a_write_follows_what_others_changed_meanwhile(room: Any) -> None:
    with acting_as(CLAUDE):
        write(room, 5, "!")
    # a person's client changes the note between two of the assistant's writes
    person = Doc()
    person.apply_update(room.doc.get_update())
    person.get("contents", type=Text).insert(0, "Yes, ")
    room.apply_update(person.get_update(room.doc.get_state()), origin=None)
    with acting_as(CLAUDE):
        write(room, len(b"Yes, start!"), " Done.")
    assert str(room.doc.get("contents", type=Text)) == "Yes, start! Done."


async def test_without_an_actor_the_change_is_the_servers_own(room: Any) -> None:
    write(room, 0, "background ")
    assert room.doc.client_id in clients(room.doc.get_state())
    assert users(room) == {}


async def test_a_change_that_only_removes_is_recorded_as_its_deletion_set(room: Any) -> None:
    """Accepting a suggestion removes its delimiters: who removed them goes into `ds`, as Yjs's
    PermanentUserData records a person's deletions, so clients can say who accepted."""
    with acting_as(CLAUDE):
        write(room, 5, " {++x++}")
    before = room.doc.get_update()
    with acting_as(ADA), room.writing() as doc:
        del doc.get("contents", type=Text)[6:9]
    entry = room.doc.get(USERS, type=Map)["ada"].to_py()
    assert entry["ids"] == [] and len(entry["ds"]) == 1  # removed, wrote nothing
    # the set is exactly what was removed: as the deletion part of an update, it removes just that
    replay = Doc()
    replay.apply_update(before)
    replay.apply_update(b"\x00" + bytes(entry["ds"][0]))
    assert str(replay.get("contents", type=Text)) == "start x++}"
    # a change that also writes records no set (its deletions are not told apart from its insertions)
    with acting_as(ADA), room.writing() as doc:
        text = doc.get("contents", type=Text)
        del text[7:10]
        text.insert(0, ">")
    assert len(room.doc.get(USERS, type=Map)["ada"].to_py()["ds"]) == 1
