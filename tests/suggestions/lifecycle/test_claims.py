"""The claim behind every decision (suggestions/lifecycle/claims.py): refused, stale, crashed and abandoned
claims."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore.offsets import text_delete
from lensrelay.docstore.texts import CONTENTS
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle import deciding
from suggestions.lifecycle.claims import CLAIM_TIMEOUT
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.proposing import (
    EditSpec,
    Proposer,
    suggestion_propose_edits,
    suggestion_propose_move_or_delete,
)
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)

ORIGINAL = "The quick brown fox.\n"


@pytest.fixture
async def world(store: Any, make_folder: Any) -> dict[str, Any]:
    folder = await sync_to_async(make_folder)("Lens")
    fox = await document_create(store=store, folder=folder, path="/Fox.md", text=ORIGINAL)
    await document_create(store=store, folder=folder, path="/Taken.md", text="here first\n")
    index = path_index(store)
    await index.ensure()
    alice = await sync_to_async(User.objects.create_superuser)("alice", "a@example.org", "pw")
    return {"fox": fox, "entry": index.by_doc_id(fox.doc_id), "alice": alice}


async def propose_edit(store: Any, world: dict[str, Any]) -> Suggestion:
    outcome = await suggestion_propose_edits(
        store=store,
        entry=world["entry"],
        proposer=Proposer(author="claude"),
        specs=[EditSpec("quick", "slow")],
        tool="edit",
    )
    assert outcome.suggestion is not None
    return outcome.suggestion


async def row_of(suggestion: Suggestion) -> Suggestion:
    return await Suggestion.objects.select_related("decided_by").aget(pk=suggestion.pk)


async def history(suggestion: Suggestion) -> int:
    return await LogEntry.objects.filter(object_id=str(suggestion.pk)).acount()


async def test_a_refused_change_releases_the_claim_back_to_pending(store: Any, world: dict[str, Any]) -> None:
    move = await suggestion_propose_move_or_delete(
        store=store,
        entry=world["entry"],
        proposer=Proposer(author="claude"),
        new_path="Lens/Taken.md",
        comment=None,
    )
    decision = await suggestion_decide(store=store, suggestion=move, user=world["alice"], accept=True)
    assert not decision.ok and "already exists" in decision.reason
    row = await row_of(move)
    assert (row.status, row.decided_by, row.decided_at) == ("pending", None, None)
    assert await history(move) == 0
    # still decidable
    rejected = await suggestion_decide(store=store, suggestion=row, user=world["alice"], accept=False)
    assert rejected.ok and (await row_of(move)).status == "rejected" and await history(move) == 1


async def test_a_stale_suggestion_has_no_decider_and_no_history(store: Any, world: dict[str, Any]) -> None:
    suggestion = await propose_edit(store, world)
    room = await store.get(world["fox"].doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    raw = str(ytext)
    with room.transact():
        text_delete(ytext, current=raw, start=raw.index("{--"), end=raw.rindex("++}") + 3)
    decision = await suggestion_decide(store=store, suggestion=suggestion, user=world["alice"], accept=True)
    assert not decision.ok and decision.reason == deciding.STALE_GONE
    row = await row_of(suggestion)
    assert (row.status, row.decided_by) == ("stale", None)
    assert await history(suggestion) == 0


async def test_a_crash_while_applying_releases_the_claim(
    store: Any, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    suggestion = await propose_edit(store, world)

    async def crash(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(deciding, "_change_document", crash)
    with pytest.raises(RuntimeError, match="disk on fire"):
        await suggestion_decide(store=store, suggestion=suggestion, user=world["alice"], accept=True)
    assert (await row_of(suggestion)).status == "pending"


async def test_a_live_claim_is_respected_and_an_abandoned_one_taken_over(
    store: Any, world: dict[str, Any]
) -> None:
    suggestion = await propose_edit(store, world)
    bob = await sync_to_async(User.objects.create_superuser)("bob", "b@example.org", "pw")
    # bob's process claimed it a moment ago and is still applying
    await Suggestion.objects.filter(pk=suggestion.pk).aupdate(
        status="rejecting", decided_by=bob, decided_at=timezone.now()
    )
    decision = await suggestion_decide(store=store, suggestion=suggestion, user=world["alice"], accept=True)
    assert not decision.ok and decision.reason == "suggestion is already being rejected by bob"
    # bob's process died long ago: the claim is abandoned and alice may decide
    await Suggestion.objects.filter(pk=suggestion.pk).aupdate(
        decided_at=timezone.now() - CLAIM_TIMEOUT - timedelta(seconds=1)
    )
    decision = await suggestion_decide(store=store, suggestion=suggestion, user=world["alice"], accept=True)
    assert decision.ok
    row = await row_of(suggestion)
    assert (row.status, row.decided_by.username if row.decided_by else None) == ("accepted", "alice")
    assert await history(suggestion) == 1
