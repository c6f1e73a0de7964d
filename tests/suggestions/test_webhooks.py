"""Suggestions tell webhooks: `suggestion.created` with the proposal, `suggestion.decided` with the reviewer
and the note, both written in the transaction that records them; superseded and stale count as decided,
an undone decision does not."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from lensrelay.webhooks.models import WebhookEndpoint, WebhookEvent
from suggestions.deciding import suggestion_decide
from suggestions.proposing import (
    EditSpec,
    Proposer,
    suggestion_propose_edits,
    suggestion_propose_move_or_delete,
)

pytestmark = pytest.mark.django_db(transaction=True)


def events(type: str) -> list[dict[str, Any]]:
    return [e.data for e in WebhookEvent.objects.filter(type=type).order_by("id")]


@pytest.fixture
def endpoint(transactional_db: None) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(name="all", url="https://hooks.example/", all_folders=True)


async def test_a_proposal_and_its_acceptance_are_told_with_reviewer_and_note(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    folder = await sync_to_async(make_folder)("Team")
    document = await document_create(store=store, folder=folder, path="/Note.md", text="alpha beta gamma\n")
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(document.doc_id)
    assert entry is not None
    proposer = Proposer(author="claude", client_name="Claude Code")
    outcome = await suggestion_propose_edits(
        store=store,
        entry=entry,
        proposer=proposer,
        specs=[EditSpec("beta", "BETA")],
        tool="edit",
        comment="why",
    )
    row = outcome.suggestion
    assert row is not None
    (created,) = await sync_to_async(events)("suggestion.created")
    assert created["suggestion"] | {"created": None} == {
        "id": row.uid,
        "kind": "edit",
        "status": "pending",
        "doc_id": document.doc_id,
        "folder": "Team",
        "folder_id": folder.pk,
        "path": "Team/Note.md",
        "new_path": None,
        "author": "claude",
        "client_name": "Claude Code",
        "token_id": None,
        "tool": "edit",
        "comment": "why",
        "old_text": "beta",
        "new_text": "BETA",
        "text_truncated": False,
        "created": None,
    }
    ada = await sync_to_async(User.objects.create_user)("ada", is_staff=True)
    decision = await suggestion_decide(store=store, suggestion=row, user=ada, accept=True, note="Thanks")
    assert decision.ok
    (decided,) = await sync_to_async(events)("suggestion.decided")
    assert decided["suggestion"]["status"] == "accepted"
    assert decided["decision"] | {"decided_at": None} == {
        "status": "accepted",
        "reviewer": {"id": ada.pk, "username": "ada"},
        "note": "Thanks",
        "decided_at": None,
        "superseded_by": None,
    }
    event = await sync_to_async(WebhookEvent.objects.get)(type="suggestion.decided")
    assert event.folder_id == folder.pk and event.doc_id == document.doc_id


async def test_a_rejection_without_a_reviewer_and_a_move_proposal(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    folder = await sync_to_async(make_folder)("Team")
    document = await document_create(store=store, folder=folder, path="/Note.md", text="one\n")
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(document.doc_id)
    assert entry is not None
    row = await suggestion_propose_move_or_delete(
        store=store, entry=entry, proposer=Proposer(author="bot"), new_path="Team/Moved.md", comment=None
    )
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=False)
    assert decision.ok
    created = await sync_to_async(events)("suggestion.created")
    decided = await sync_to_async(events)("suggestion.decided")
    assert [c["suggestion"]["kind"] for c in created] == ["move"]
    assert created[0]["suggestion"]["new_path"] == "Team/Moved.md"
    assert [(d["decision"]["status"], d["decision"]["reviewer"]) for d in decided] == [("rejected", None)]


async def test_without_endpoints_nothing_is_written(store: Any, make_folder: Any) -> None:
    folder = await sync_to_async(make_folder)("Team")
    document = await document_create(store=store, folder=folder, path="/Note.md", text="alpha\n")
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(document.doc_id)
    assert entry is not None
    await suggestion_propose_edits(
        store=store, entry=entry, proposer=Proposer(author="c"), specs=[EditSpec("alpha", "b")], tool="edit"
    )
    assert await sync_to_async(WebhookEvent.objects.count)() == 0
