"""Edits whose old_string spans a person's {>>comment<<}: the comment stays byte-identical where it is, and
accepting or rejecting the suggestion leaves it there."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.docstore.texts import text_cache
from lensrelay.vault.documents import document_create
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.markup.criticmarkup import accept_all, reject_all
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)

COMMENT = "{>>check the colour<<}"
TEXT = f"The quick brown{COMMENT} fox jumps.\n"


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Fox.md", text=TEXT)


async def edit(call: Any, old: str, new: str) -> tuple[str, bool]:
    await call("read", {"file_path": "Lens/Fox.md"})
    return await call("edit", {"file_path": "Lens/Fox.md", "old_string": old, "new_string": new})


async def decide(store: Any, *, accept: bool) -> None:
    [row] = await sync_to_async(lambda: list(Suggestion.objects.all()))()
    assert (await suggestion_decide(store=store, suggestion=row, user=None, accept=accept)).ok


@pytest.mark.parametrize(
    "old,new",
    [
        ("quick brown fox", "slow red fox"),  # as read shows it: the comment hidden
        (f"quick brown{COMMENT} fox", "slow red fox"),  # the comment quoted
        (f"quick brown{COMMENT} fox", f"slow red{COMMENT} fox"),  # quoted on both sides
    ],
)
@pytest.mark.parametrize("accept", [True, False])
async def test_comment_in_the_replaced_text_stays(
    store: Any, note: Any, call: Any, old: str, new: str, accept: bool
) -> None:
    text, error = await edit(call, old, new)
    assert not error, text
    raw = await text_cache(store).get(note.doc_id)
    assert raw.count(COMMENT) == 1
    assert (
        accept_all(raw) == "The slow red fox jumps.\n" and reject_all(raw) == "The quick brown fox jumps.\n"
    )
    await decide(store, accept=accept)
    after = await text_cache(store).get(note.doc_id)
    # The comment is kept, byte-identical, at the end of the replaced words it followed.
    assert after == (f"The slow red{COMMENT} fox jumps.\n" if accept else TEXT)


async def test_comment_inside_a_word_splits_the_deletion_around_it(
    store: Any, make_folder: Any, call: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    text = "The quick br{>>mid<<}own fox.\n"
    note = await document_create(store=store, folder=folder, path="/Fox.md", text=text)
    _, error = await edit(call, "quick br{>>mid<<}own", "slow")
    assert not error
    raw = await text_cache(store).get(note.doc_id)
    assert raw.count("{>>mid<<}") == 1 and reject_all(raw) == "The quick brown fox.\n"
    await decide(store, accept=False)
    assert await text_cache(store).get(note.doc_id) == text


@pytest.mark.parametrize(
    "old,new",
    [
        ("quick brown{>>not there<<} fox", "slow fox"),  # a comment the document does not hold
        ("quick brown fox", "slow{>>smuggled<<} fox"),  # a comment added by the assistant
        ("quick brown{>>check the colour<<} fox", "slow{>>check the colour<<}{>>x<<} fox"),
    ],
)
async def test_comments_the_document_does_not_hold_are_refused(
    store: Any, note: Any, call: Any, old: str, new: str
) -> None:
    text, error = await edit(call, old, new)
    assert error and "CriticMarkup delimiter '{>>'" in text
    assert await text_cache(store).get(note.doc_id) == TEXT
    assert await sync_to_async(Suggestion.objects.count)() == 0
