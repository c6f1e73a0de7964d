"""Undoing a decision (suggestions/lifecycle/undoing.py) through the admin's undo endpoint and bulk action,
with the live store the admin decided on: the markup comes back exactly, the row is pending again, history
keeps both entries; refused (nothing changed) without the permission, after the window, for a never-decided
suggestion and when the text the decision left was edited since."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.admin.models import LogEntry
from django.test import AsyncClient, override_settings
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.texts import CONTENTS
from suggestions.markup.criticmarkup import Span
from suggestions.markup.undo_record import Region, settled_regions
from suggestions.models import Suggestion
from tests.suggestions.test_admin import CHANGELIST, client_for, decide_url, propose, raw_text, refreshed

pytestmark = pytest.mark.django_db(transaction=True)

FOX = "# Fox 🦊\n\nThe quick brown fox jumps over the lazy dog. 中文 stays.\nLast line.\n"


def undo_url(suggestion: Suggestion) -> str:
    return f"{CHANGELIST}{suggestion.uid}/undo/"


@pytest.fixture
async def fox(store: Any, make_folder: Any) -> Any:
    from lensrelay.vault.documents import document_create

    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Fox.md", text=FOX)


async def undo(client: AsyncClient, suggestion: Suggestion, **data: str) -> tuple[int, dict[str, Any]]:
    response = await client.post(undo_url(suggestion), data)
    return response.status_code, json.loads(response.content)


async def edit_text(store: Any, doc_id: str, *, at: str, insert: str) -> None:
    room = await store.get(doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        current = str(ytext)
        text_insert(ytext, current=current, index=current.index(at), value=insert)
    await room.flushed()


def test_settled_regions_keep_what_each_change_removed_and_where() -> None:
    raw = "ab{--x--}{++y++}cd{++z++}e"
    first = [Span(2, 12), Span(13, 16)]  # "{--x--}{++" and "++}": accepted, keeps "y"
    second = [Span(18, 25)]  # "{++z++}" rejected
    regions = settled_regions(raw, [second, first])
    assert regions == [
        Region(2, 3, "y", ((0, "{--x--}{++"), (1, "++}"))),
        Region(5, 5, "", ((0, "{++z++}"),)),
    ]


async def test_accept_then_undo_brings_the_markup_back_exactly_and_the_row_is_pending(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"), ("lazy dog", "sleepy 猫"))
    with_markup = await raw_text(store, fox)
    await reviewer.post(decide_url(suggestion), {"decision": "accept", "note": "fine"})
    assert await raw_text(store, fox) == FOX.replace("quick brown", "slow red").replace(
        "lazy dog", "sleepy 猫"
    )
    # a person writes elsewhere meanwhile: undo does not care
    await edit_text(store, fox.doc_id, at="Last line.", insert="New ")

    status, body = await undo(reviewer, suggestion)
    assert (status, body["ok"]) == (200, True), body
    assert "pending again" in body["message"]
    assert await raw_text(store, fox) == with_markup.replace("Last line.", "New Last line.")
    row = await refreshed(suggestion)
    assert (row.status, row.decided_by, row.decided_at, row.note, row.undo) == ("pending", None, None, "", {})
    history = [e.change_message async for e in LogEntry.objects.filter(object_id=str(row.pk)).order_by("pk")]
    assert history == [
        "Accepted the suggestion: fine",
        "Undid the acceptance: the suggestion is pending again",
    ]
    # pending in full: it can be decided again, and its markup is followed again
    await reviewer.post(decide_url(row), {"decision": "reject"})
    assert await raw_text(store, fox) == FOX.replace("Last line.", "New Last line.")
    status, body = await undo(reviewer, suggestion)
    assert body["ok"] is True and await raw_text(store, fox) == with_markup.replace(
        "Last line.", "New Last line."
    )


async def test_undo_is_refused_when_the_settled_text_was_edited(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    await reviewer.post(decide_url(suggestion), {"decision": "accept"})
    await edit_text(store, fox.doc_id, at="red fox", insert="very ")
    edited = await raw_text(store, fox)
    status, body = await undo(reviewer, suggestion)
    assert (status, body["ok"]) == (409, False)
    assert "the text changed since the decision" in body["message"] and "slow red" in body["message"]
    assert await raw_text(store, fox) == edited
    row = await refreshed(suggestion)
    assert row.status == "accepted" and row.decided_by is not None and row.decided_by.username == "rita"
    assert row.undo  # still undoable if the person takes their word back
    # typing where a rejected insertion stood (nothing was left there) is caught too
    insertion = await propose(store, fox, ("Last line.", "Last line. More."))
    await reviewer.post(decide_url(insertion), {"decision": "reject"})
    assert "More." not in await raw_text(store, fox)
    await edit_text(store, fox.doc_id, at="\n", insert="")
    await edit_text(store, fox.doc_id, at="Last line.\n", insert="X")
    status, body = await undo(reviewer, insertion)
    assert (status, body["ok"]) == (409, False), body
    assert "something was typed or deleted there" in body["message"]
    assert "More." not in await raw_text(store, fox)


async def test_attacks_weaker_role_never_decided_outside_the_window_csrf_and_methods(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick", "slow"))
    never = await propose(store, fox, ("lazy", "sleepy"))
    await reviewer.post(decide_url(suggestion), {"decision": "accept"})
    after_accept = await raw_text(store, fox)

    viewer = await client_for("victor", "view_suggestion")
    status, body = await undo(viewer, suggestion)
    assert (status, body["ok"]) == (403, False) and "review permission" in body["message"]
    assert (await refreshed(suggestion)).status == "accepted"

    status, body = await undo(reviewer, never)
    assert (status, body["ok"]) == (409, False) and "never decided" in body["message"]

    assert (await reviewer.get(undo_url(suggestion))).status_code == 405
    assert (await reviewer.post(f"{CHANGELIST}nosuchuid/undo/")).status_code == 404
    strict = await client_for("carla", "view_suggestion", "review_suggestion", csrf=True)
    assert (await strict.post(undo_url(suggestion))).status_code == 403
    anonymous = await AsyncClient().post(undo_url(suggestion))
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]

    with override_settings(LENSRELAY_UNDO_SECONDS=60):
        await Suggestion.objects.filter(pk=suggestion.pk).aupdate(
            decided_at=timezone.now() - timedelta(seconds=61)
        )
        status, body = await undo(reviewer, suggestion)
    assert (status, body["ok"]) == (409, False) and "for 1 minute only" in body["message"]
    assert await raw_text(store, fox) == after_accept
    assert (await refreshed(suggestion)).status == "accepted"


async def test_two_people_undoing_at_once_give_one_winner(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    with_markup = await raw_text(store, fox)
    await reviewer.post(decide_url(suggestion), {"decision": "accept"})
    other = await client_for("otto", "view_suggestion", "review_suggestion")
    answers = await asyncio.gather(undo(reviewer, suggestion), undo(other, suggestion))
    assert sorted(body["ok"] for _, body in answers) == [False, True], answers
    assert await raw_text(store, fox) == with_markup  # written back once, not twice
    assert (await refreshed(suggestion)).status == "pending"


async def test_a_bulk_accept_is_undone_as_a_whole_or_refused_naming_what_moved(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    picks = [
        await propose(store, fox, pair) for pair in (("quick", "slow"), ("lazy", "sleepy"), ("Last", "Final"))
    ]
    with_markup = await raw_text(store, fox)
    acted = await reviewer.post(
        CHANGELIST, {"action": "accept_selected", "_selected_action": [s.pk for s in picks], "post": "yes"}
    )
    assert acted.status_code == 302
    batches = {(await refreshed(s)).decision_batch for s in picks}
    assert len(batches) == 1 and "" not in batches

    # a person edits what one of them left: the whole undo is refused, naming that one, nothing changes
    await edit_text(store, fox.doc_id, at="sleepy", insert="very ")
    edited = await raw_text(store, fox)
    status, body = await undo(reviewer, picks[0], batch="1")
    assert (status, body["ok"]) == (409, False)
    assert picks[1].uid in body["message"] and picks[0].uid not in body["message"]
    assert await raw_text(store, fox) == edited
    assert {(await refreshed(s)).status for s in picks} == {"accepted"}

    # the person takes the word back: now all three come back at once
    room = await store.get(fox.doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        current = str(ytext)
        start = current.index("very ")
        del ytext[len(current[:start].encode()) : len(current[: start + 5].encode())]
    await room.flushed()
    status, body = await undo(reviewer, picks[0], batch="1")
    assert body["ok"] is True, body
    assert await raw_text(store, fox) == with_markup
    assert {(await refreshed(s)).status for s in picks} == {"pending"}


async def test_the_admin_action_confirms_then_undoes_and_explains_what_cannot_be(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    first = await propose(store, fox, ("quick", "slow"))
    second = await propose(store, fox, ("lazy", "sleepy"))
    with_markup = await raw_text(store, fox)
    for s in (first, second):
        await reviewer.post(decide_url(s), {"decision": "reject"})
    everything = f"{CHANGELIST}?status=all"
    selected = {"action": "undo_selected", "_selected_action": [first.pk, second.pk]}
    confirm = await reviewer.post(everything, selected)
    page = confirm.content.decode()
    assert (
        "Undo the decisions on the selected suggestions?" in page and 'value="Yes, undo 2 decisions"' in page
    )
    assert (await refreshed(first)).status == "rejected"
    acted = await reviewer.post(everything, {**selected, "post": "yes"}, follow=True)
    assert next(str(m) for m in acted.context["messages"]).startswith("Undone: ")
    assert await raw_text(store, fox) == with_markup

    # a move accepted changed the vault: refused with what to do instead; a rejected move just reopens
    moved = await Suggestion.objects.acreate(
        kind="move", doc_id=fox.doc_id, path="Lens/Fox.md", new_path="Lens/Den.md", author="c", tool="move"
    )
    await reviewer.post(decide_url(moved), {"decision": "reject"})
    _, body = await undo(reviewer, moved)
    assert body["ok"] is True and (await refreshed(moved)).status == "pending"
    await Suggestion.objects.filter(pk=moved.pk).aupdate(status="accepted", decided_at=timezone.now())
    refused = await reviewer.post(everything, {"action": "undo_selected", "_selected_action": [moved.pk]})
    assert "an accepted move cannot be undone here: move the note back" in refused.content.decode()
    assert "Yes, undo" not in refused.content.decode()

    # without the permission the action does not exist (a viewer has only the audit exports): nothing undone
    viewer = await client_for("victor", "view_suggestion")
    before = await raw_text(store, fox)
    shown = await viewer.post(everything, {**selected, "post": "yes"}, follow=True)
    assert not any(str(m).startswith("Undone") for m in shown.context["messages"])
    assert await raw_text(store, fox) == before


async def test_an_accepted_delete_is_not_undone_here_and_the_trash_names_who_deleted(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    from lensrelay.docstore import folderdoc
    from lensrelay.models import Folder

    delete = await Suggestion.objects.acreate(
        kind="delete", doc_id=fox.doc_id, path="Lens/Fox.md", author="claude", tool="delete"
    )
    await reviewer.post(decide_url(delete), {"decision": "accept"})
    assert (await refreshed(delete)).status == "accepted"
    status, body = await undo(reviewer, delete)
    assert (status, body["ok"]) == (409, False)
    assert "restore the note from the trash" in body["message"]
    folder = await Folder.objects.aget(name="Lens")
    room = await store.get(folder.doc_id)
    meta = folderdoc.entry_meta(room.doc, path="/_trash/Fox.md")
    assert meta["trashed_by"] == f"rita (accepting claude's suggestion {delete.uid})"
