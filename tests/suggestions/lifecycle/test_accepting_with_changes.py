"""Accepting with changes (suggestions/lifecycle/deciding.py with suggestions/markup/revising.py), through
the admin's decide endpoint as the review page's card posts it: one decision, the row keeps the proposed
and the accepted text, history says what changed, undo brings the original proposal back. Refused with
nothing changed: without the review permission, with delimiters, with the wrong number of parts, on a
stale suggestion."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.test import AsyncClient

from suggestions.models import Suggestion
from tests.suggestions.lifecycle.test_undoing import edit_text, undo
from tests.suggestions.test_admin import (
    ORIGINAL,
    client_for,
    decide_url,
    messages_of,
    propose,
    raw_text,
    refreshed,
)

pytestmark = pytest.mark.django_db(transaction=True)


async def history(suggestion: Suggestion) -> list[str]:
    entries = LogEntry.objects.filter(object_id=str(suggestion.pk)).order_by("pk")
    return [entry.change_message async for entry in entries]


async def test_a_reviewer_changes_the_inserted_text_and_accepts_it_in_one_decision(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"), ("lazy dog", "sleepy cat"))
    proposal = await raw_text(store, fox)
    response = await reviewer.post(
        decide_url(suggestion),
        # as a browser sends the card's fields: line breaks as CRLF
        {"decision": "accept", "revision": ["slow\r\nruby", "sleepy cat"], "note": "one word"},
        follow=True,
    )
    assert messages_of(response) == [
        f"Accepted the edit of Lens/Fox.md ({suggestion.uid}) with your changes: "
        "slow{-- red--}{++⏎ruby++}."
    ]
    assert await raw_text(store, fox) == ORIGINAL.replace("quick brown", "slow\nruby").replace(
        "lazy dog", "sleepy cat"
    )
    row = await refreshed(suggestion)
    assert row.status == "accepted" and row.accepted_with_changes
    assert row.revision == ["slow\nruby", "sleepy cat"]
    assert [hunk["new"] for hunk in row.hunks] == ["slow red", "sleepy cat"]  # what was proposed
    assert row.revised_hunks() == [("slow red", "slow\nruby")]
    [entry] = await history(row)
    assert entry == "Accepted the suggestion with changes: slow{-- red--}{++⏎ruby++}: one word"

    # undo brings the assistant's proposal back, not the reviewer's text
    status, body = await undo(reviewer, row)
    assert (status, body["ok"]) == (200, True), body
    assert await raw_text(store, fox) == proposal
    row = await refreshed(suggestion)
    assert (row.status, row.revision) == ("pending", [])
    assert [hunk["new"] for hunk in row.hunks] == ["slow red", "sleepy cat"]
    # and it is a whole proposal again: a plain accept takes it as proposed
    await reviewer.post(decide_url(row), {"decision": "accept"})
    assert await raw_text(store, fox) == ORIGINAL.replace("quick brown", "slow red").replace(
        "lazy dog", "sleepy cat"
    )
    assert (await refreshed(row)).revision == []


async def test_fields_left_as_proposed_are_a_plain_accept_and_a_reject_ignores_them(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    kept = await propose(store, fox, ("quick brown", "slow red"))
    await reviewer.post(decide_url(kept), {"decision": "accept", "revision": ["slow red"]})
    row = await refreshed(kept)
    assert row.status == "accepted" and row.revision == []
    assert await history(row) == ["Accepted the suggestion"]

    rejected = await propose(store, fox, ("lazy dog", "sleepy cat"))
    await reviewer.post(decide_url(rejected), {"decision": "reject", "revision": ["sleepy owl"]})
    row = await refreshed(rejected)
    assert row.status == "rejected" and row.revision == []
    assert "owl" not in await raw_text(store, fox)


@pytest.mark.parametrize(
    ("revision", "said"),
    [
        (["slow {++red"], "delimiter '{++'"),
        (["slow red<<}"], "delimiter '<<}'"),
        (["a", "b"], "has 1 part(s), but 2 changed text(s)"),
        ([""], "reject the suggestion"),
    ],
)
async def test_a_hostile_or_malformed_revision_is_refused_and_nothing_changes(
    store: Any, fox: Any, reviewer: AsyncClient, revision: list[str], said: str
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    before = await raw_text(store, fox)
    response = await reviewer.post(
        decide_url(suggestion), {"decision": "accept", "revision": revision}, follow=True
    )
    [message] = messages_of(response)
    assert message.startswith(f"Could not accept the edit of Lens/Fox.md ({suggestion.uid}): cannot accept")
    assert said in message
    assert await raw_text(store, fox) == before
    row = await refreshed(suggestion)
    assert (row.status, row.revision, row.decided_by) == ("pending", [], None)
    assert await history(row) == []


async def test_without_the_review_permission_a_revision_is_forbidden(
    store: Any, fox: Any, transactional_db: None
) -> None:
    viewer = await client_for("victor", "view_suggestion")
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    before = await raw_text(store, fox)
    response = await viewer.post(decide_url(suggestion), {"decision": "accept", "revision": ["mine"]})
    assert response.status_code == 403
    assert await raw_text(store, fox) == before
    assert (await refreshed(suggestion)).status == "pending"


async def test_a_stale_suggestion_is_not_revised(store: Any, fox: Any, reviewer: AsyncClient) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    await edit_text(store, fox.doc_id, at="red++}", insert="hot ")
    typed = await raw_text(store, fox)
    await reviewer.post(decide_url(suggestion), {"decision": "accept", "revision": ["fast"]})
    assert await raw_text(store, fox) == typed
    row = await refreshed(suggestion)
    assert row.status == "stale" and row.revision == []
