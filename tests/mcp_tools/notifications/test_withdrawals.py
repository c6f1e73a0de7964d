"""Every way a suggestion leaves pending tells its session, withdrawals included: a version restore that
removed its markup, and a later edit that superseded it."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone

from lensrelay.history.models import DocVersion
from lensrelay.history.restoring import version_restore_in_store
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from mcp_tools.models import McpSession
from mcp_tools.notifications import events
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.models import Suggestion
from tests.mcp_tools.notifications.logged import logged_params

pytestmark = pytest.mark.django_db(transaction=True)


def listening(name: str) -> str:
    now = timezone.now()
    McpSession.objects.create(id=name, protocol_version="2025-11-25", created_at=now, last_seen_at=now)
    events.stream_claim(session_id=name)
    return name


def decisions(session_id: str) -> list[dict[str, Any]]:
    return [params["data"] for params in logged_params(session_id, "notifications/message")]


def newest_version(doc_id: str) -> DocVersion:
    version = DocVersion.objects.filter(doc_id=doc_id).order_by("-created", "-id").first()
    assert version is not None
    return version


async def propose(store: Any, doc_id: str, old: str, new: str, *, session: str) -> Suggestion:
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(doc_id)
    assert entry is not None
    outcome = await suggestion_propose_edits(
        store=store,
        entry=entry,
        proposer=Proposer(author="claude", session_id=session),
        specs=[EditSpec(old, new)],
        tool="edit",
    )
    assert outcome.suggestion is not None
    return outcome.suggestion


async def test_a_restore_that_removes_the_markup_tells_the_proposing_session(
    store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    user = await sync_to_async(User.objects.create_superuser)("rita", "r@example.org", "pw")
    mine, other = await sync_to_async(listening)("mine"), await sync_to_async(listening)("other")
    note = await document_create(store=store, folder=folder, path="/Leaf.md", text="Plants make sugar.\n")
    room = await store.get(note.doc_id)
    await store.compact(room)
    old = await sync_to_async(newest_version)(note.doc_id)
    withdrawn = await propose(store, note.doc_id, "sugar", "glucose", session=mine)

    await version_restore_in_store(store=store, version=old, user=user)

    [data] = await sync_to_async(decisions)(mine)
    assert data["type"] == "suggestion_decided" and data["suggestion"] == withdrawn.uid
    assert data["status"] == "rejected" and data["decidedBy"] == "rita"
    assert data["note"].startswith("Withdrawn: the document was restored to its version of")
    assert await sync_to_async(decisions)(other) == []


async def test_a_superseded_suggestion_tells_its_session(store: Any, make_folder: Any) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    first, second = await sync_to_async(listening)("first"), await sync_to_async(listening)("second")
    note = await document_create(store=store, folder=folder, path="/Leaf.md", text="Plants make sugar.\n")
    older = await propose(store, note.doc_id, "sugar", "glucose", session=first)
    newer = await propose(store, note.doc_id, "glucose", "fructose", session=second)

    row = await sync_to_async(Suggestion.objects.get)(pk=older.pk)
    assert row.status == Suggestion.Status.SUPERSEDED
    [data] = await sync_to_async(decisions)(first)
    assert data["suggestion"] == older.uid and data["status"] == "superseded"
    assert data["note"].startswith("Withdrawn: superseded by suggestion " + newer.uid)
    assert await sync_to_async(decisions)(second) == []
