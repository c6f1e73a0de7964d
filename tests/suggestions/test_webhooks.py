"""Suggestions tell webhooks: `suggestion.created` with the proposal, `suggestion.decided` with the reviewer
and the note, `suggestion.reopened` when a decision is undone and `suggestion.reverted` when an accepted
change is rolled back, each written in the transaction that records it; superseded and stale count as
decided."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from lensrelay.access.tokens import token_create
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from lensrelay.webhooks.delivery import events_release
from lensrelay.webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.proposing import (
    EditSpec,
    Proposer,
    suggestion_propose_edits,
    suggestion_propose_move_or_delete,
)
from suggestions.lifecycle.rollback import assistant_rollback_in_store, assistant_rollback_plan_in_store

from .lifecycle.test_rollback import propose as propose_as
from .lifecycle.test_undoing import undo_url
from .test_admin import client_for, decide_url, propose

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
        "person": None,
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
        "accepted_with_changes": False,
        "changes": [],
    }
    event = await sync_to_async(WebhookEvent.objects.get)(type="suggestion.decided")
    assert event.folder_id == folder.pk and event.doc_id == document.doc_id


async def test_an_acceptance_with_changes_tells_what_was_proposed_and_what_was_accepted(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    folder = await sync_to_async(make_folder)("Team")
    document = await document_create(store=store, folder=folder, path="/Note.md", text="alpha beta gamma\n")
    row = await propose(store, document, ("beta gamma", "BETA GAMMA"))
    rita = await client_for("rita", "view_suggestion", "review_suggestion")
    await rita.post(decide_url(row), {"decision": "accept", "revision": ["BETA DELTA"]})
    (decided,) = await sync_to_async(events)("suggestion.decided")
    assert decided["decision"]["accepted_with_changes"] is True
    assert decided["decision"]["changes"] == [
        {"proposed": "BETA GAMMA", "accepted": "BETA DELTA", "difference": "BETA {--GAMMA--}{++DELTA++}"}
    ]
    assert decided["suggestion"]["new_text"] == "BETA GAMMA"  # the proposal, as created


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


# -- undone and rolled back: the suggestion's life after its decision ----------------------------------------


async def test_an_undo_is_told_as_reopened_with_what_it_took_back_and_by_whom(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    folder = await sync_to_async(make_folder)("Team")
    document = await document_create(store=store, folder=folder, path="/Note.md", text="alpha beta gamma\n")
    row = await propose(store, document, ("beta", "BETA"))
    rita = await client_for("rita", "view_suggestion", "review_suggestion")
    viewer = await client_for("vera", "view_suggestion")
    await rita.post(decide_url(row), {"decision": "accept"})

    # Without the permission to review, the undo is refused: nothing is told.
    refused = await viewer.post(undo_url(row))
    assert refused.status_code == 403 and await sync_to_async(events)("suggestion.reopened") == []

    done = json.loads((await rita.post(undo_url(row))).content)
    assert done["ok"] is True, done
    (reopened,) = await sync_to_async(events)("suggestion.reopened")
    assert reopened["suggestion"]["id"] == row.uid and reopened["suggestion"]["status"] == "pending"
    rita_user = await User.objects.aget(username="rita")
    assert reopened["undone"] | {"at": None} == {
        "status": "accepted",
        "by": {"id": rita_user.pk, "username": "rita"},
        "at": None,
    }
    event = await WebhookEvent.objects.aget(type="suggestion.reopened")
    assert event.folder_id == folder.pk and event.doc_id == document.doc_id
    # Decided again, then undone again: each step told once, in order.
    await rita.post(decide_url(row), {"decision": "reject"})
    await rita.post(undo_url(row))
    decided = await sync_to_async(events)("suggestion.decided")
    reopened_all = await sync_to_async(events)("suggestion.reopened")
    assert [d["decision"]["status"] for d in decided] == ["accepted", "rejected"]
    assert [r["undone"]["status"] for r in reopened_all] == ["accepted", "rejected"]


async def test_a_rollback_is_told_as_reverted_and_its_rejections_as_decided(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    folder = await sync_to_async(make_folder)("Team")
    document = await document_create(
        store=store, folder=folder, path="/Note.md", text="Line one.\nLine two.\nLine three.\n"
    )
    claude, _ = await sync_to_async(token_create)(name="claude", role="suggest")
    kept = await propose_as(store, document, claude, "one", "ONE")
    pending = await propose_as(store, document, claude, "three", "THREE")
    rita = await client_for("rita", "view_suggestion", "review_suggestion")
    await rita.post(decide_url(kept), {"decision": "accept"})
    rita_user = await User.objects.aget(username="rita")

    plan = await assistant_rollback_plan_in_store(store=store, token=claude, since=None)
    await assistant_rollback_in_store(store=store, plan=plan, user=rita_user)
    (reverted,) = await sync_to_async(events)("suggestion.reverted")
    assert reverted["suggestion"]["id"] == kept.uid and reverted["suggestion"]["status"] == "reverted"
    assert reverted["reverted"]["by"] == {"id": rita_user.pk, "username": "rita"}
    assert reverted["reverted"]["at"] is not None
    decided = await sync_to_async(events)("suggestion.decided")
    assert [(d["suggestion"]["id"], d["decision"]["status"]) for d in decided] == [
        (kept.uid, "accepted"),
        (pending.uid, "rejected"),
    ]


async def test_reopened_and_reverted_reach_only_endpoints_of_their_folder_and_types(
    store: Any, make_folder: Any
) -> None:
    team = await sync_to_async(make_folder)("Team")
    other = await sync_to_async(make_folder)("Other")

    def endpoints() -> tuple[WebhookEndpoint, WebhookEndpoint, WebhookEndpoint]:
        url = "https://hooks.example/"
        everything = WebhookEndpoint.objects.create(name="all", url=url, all_folders=True)
        elsewhere = WebhookEndpoint.objects.create(name="other", url=url, all_folders=False)
        elsewhere.folders.set([other])
        decided = ["suggestion.decided"]
        decided_only = WebhookEndpoint.objects.create(
            name="d", url=url, all_folders=True, event_types=decided
        )
        return everything, elsewhere, decided_only

    everything, elsewhere, decided_only = await sync_to_async(endpoints)()
    document = await document_create(store=store, folder=team, path="/Note.md", text="alpha beta\n")
    row = await propose(store, document, ("beta", "BETA"))
    rita = await client_for("rita", "view_suggestion", "review_suggestion")
    await rita.post(decide_url(row), {"decision": "accept"})
    await rita.post(undo_url(row))

    await sync_to_async(events_release)()
    deliveries = WebhookDelivery.objects.select_related("event")
    got = {(d.event.type, d.endpoint_id) async for d in deliveries}
    assert ("suggestion.reopened", everything.pk) in got
    assert all(endpoint != elsewhere.pk for _, endpoint in got)
    assert ("suggestion.reopened", decided_only.pk) not in got and (
        "suggestion.decided",
        decided_only.pk,
    ) in got


async def test_a_persons_suggestion_is_told_with_their_name_and_no_token(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    from lensrelay.sync.suggesting import Person
    from suggestions.lifecycle.suggesting import person_rows_in_step

    sam = await sync_to_async(User.objects.create_user)("sam", is_staff=True)
    meta = json.dumps({"author": "sam", "timestamp": 1, "id": "0123456789abcdef", "user": sam.pk})
    folder = await sync_to_async(make_folder)("Team")
    note = await document_create(
        store=store, folder=folder, path="/Note.md", text=f"alpha{{++{meta}@@ beta++}}\n"
    )
    await person_rows_in_step(room=await store.get(note.doc_id), person=Person(sam.pk, "sam"))
    [created] = await sync_to_async(events)("suggestion.created")
    told = created["suggestion"]
    assert (told["id"], told["author"], told["token_id"], told["tool"]) == (
        "0123456789abcdef",
        "sam",
        None,
        "suggesting",
    )
    assert told["person"] == {"id": sam.pk, "username": "sam"} and told["new_text"] == " beta"
