"""Actors: the labels history shows for each kind, names that cannot forge another label, and the
context that carries an actor into a room's log row and through the store's database threads."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Text

from lensrelay.docstore.acting import Actor, acting_as, current_label
from lensrelay.docstore.room import Origin
from lensrelay.models import YUpdate
from lensrelay.text.names import CLIENT_NAME_LIMIT, clean_name
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_labels_name_the_kind_and_whom_a_grant_or_session_acts_for() -> None:
    assert Actor("staff", "ada", user_id=1).label == "ada (staff)"
    assert Actor("token", "bot", token_id=3).label == "bot (token #3)"
    grant = Actor("grant", "ada · Claude Desktop", token_id=7, person="ada")
    assert grant.label == "ada · Claude Desktop (OAuth grant #7 for ada)"
    # A grant is named for the client the person consented to, whatever the session calls itself.
    assert grant.with_client("claude-ai").label == "ada · Claude Desktop (OAuth grant #7 for ada)"
    session = Actor("token", "claude-review", token_id=3).with_client("Claude Code")
    assert session.display_name == "claude-review · Claude Code"
    assert session.label == "claude-review · Claude Code (token #3)"
    assert Actor("command", "manage.py import_vault").label == "manage.py import_vault (command)"


def test_hostile_names_stay_one_bounded_line_without_commas() -> None:
    assert clean_name("a,b\nc\x00d") == "a b c d"
    assert len(clean_name("x" * 1000)) == 80
    label = Actor("token", "t", token_id=1).with_client("evil, ada (staff)\n" + "z" * 500).label
    assert "," not in label and "\n" not in label and label.endswith(" (token #1)")
    assert label == "t · evil ada staff " + "z" * 25 + " (token #1)"


@pytest.mark.parametrize(
    ("client", "shown"),
    [
        ("Claude\u202e edoC", "Claude edoC"),  # a bidi override cannot reverse what follows
        ("Cl\u200baude\u2066x\u2069", "Cl aude x"),  # zero-width and isolate characters
        ("ada · Claude", "ada Claude"),  # cannot pose as another person's grant
        ("x (token #12)", "x token #12"),  # nor as another token in the audit's eyes
        ("\n\t  ", ""),
        ("y" * 500, "y" * 40),
    ],
)
def test_hostile_client_names_are_one_safe_short_line(client: str, shown: str) -> None:
    assert clean_name(client, limit=CLIENT_NAME_LIMIT) == shown
    actor = Actor("token", "bot", token_id=12).with_client(client)
    assert actor.display_name == (f"bot · {shown}" if shown else "bot")
    assert actor.label.endswith(" (token #12)") and actor.label.count("(") == 1


def test_acting_as_is_scoped_and_restores_the_outer_actor() -> None:
    assert current_label() == ""
    with acting_as(Actor("staff", "ada")):
        with acting_as(Actor("token", "bot", token_id=2)):
            assert current_label() == "bot (token #2)"
        assert current_label() == "ada (staff)"
    assert current_label() == ""


@pytest.fixture
async def content_doc(store: Any, make_folder: Any) -> str:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="start")
    return str(note.doc_id)


async def test_a_service_change_is_logged_as_the_actor_and_an_explicit_author_wins(
    store: Any, content_doc: str
) -> None:
    room = await store.get(content_doc)
    with acting_as(Actor("token", "bot", token_id=5)):
        with room.transact():
            room.doc.get("contents", type=Text).insert(0, "one ")
        await room.flushed()
        # A socket's own origin names its author itself; the context does not override it.
        with room.transact(Origin("restore", author="ada (staff) restored version 1")):
            room.doc.get("contents", type=Text).insert(0, "two ")
        await room.flushed()
        assert await store.db(current_label) == "bot (token #5)"  # the database thread knows too
    with room.transact():
        room.doc.get("contents", type=Text).insert(0, "three ")
    await room.flushed()
    authors = await store.db(
        lambda: list(
            YUpdate.objects.filter(doc_id=content_doc).order_by("id").values_list("author", flat=True)
        )
    )
    assert authors[-3:] == ["bot (token #5)", "ada (staff) restored version 1", ""]
