"""Restoring a version that lacks a pending suggestion's markup withdraws the suggestion: its row says so
(rejected, by whoever restored, with a note naming the version), never left pending for markup that is gone;
a suggestion whose markup the version still holds stays pending."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User

from lensrelay.docstore.texts import room_text
from lensrelay.history.models import DocVersion
from lensrelay.history.restoring import version_restore_in_store
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = "Plants make sugar 😀 from light.\n"


async def propose(store: Any, doc_id: str, old: str, new: str) -> Suggestion:
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(doc_id)
    assert entry is not None
    outcome = await suggestion_propose_edits(
        store=store, entry=entry, proposer=Proposer(author="claude"), specs=[EditSpec(old, new)], tool="edit"
    )
    assert outcome.suggestion is not None
    return outcome.suggestion


def newest_version(doc_id: str) -> DocVersion:
    version = DocVersion.objects.filter(doc_id=doc_id).order_by("-created", "-id").first()
    assert version is not None
    return version


async def test_restoring_a_version_without_the_markup_withdraws_the_pending_suggestion(
    store: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    user = await sync_to_async(User.objects.create_superuser)("rita", "r@example.org", "pw")
    note = await document_create(store=store, folder=folder, path="/Leaf.md", text=BEFORE)
    room = await store.get(note.doc_id)
    await store.compact(room)
    old = await sync_to_async(newest_version)(note.doc_id)
    kept = await propose(store, note.doc_id, "sugar", "glucose")
    await store.compact(room)
    with_markup = await sync_to_async(newest_version)(note.doc_id)
    assert "glucose" in room_text(room) and with_markup.pk != old.pk

    # A version holding the markup as proposed: the suggestion stays pending.
    await version_restore_in_store(store=store, version=with_markup, user=user)
    assert (await sync_to_async(Suggestion.objects.get)(pk=kept.pk)).status == Suggestion.Status.PENDING

    restored = await version_restore_in_store(store=store, version=old, user=user)
    assert room_text(room) == BEFORE
    await asyncio.sleep(0.6)  # past the editor follower's debounce: it must not decide it differently
    row = await sync_to_async(Suggestion.objects.select_related("decided_by").get)(pk=kept.pk)
    assert row.status == Suggestion.Status.REJECTED
    assert row.decided_by == user and "restored to its version of" in row.note
    assert restored.notes == ["1 pending suggestion(s) no longer in the text: 1 withdrawn, 0 stale."]
    logged = await sync_to_async(list)(LogEntry.objects.values_list("change_message", flat=True))
    assert any("restored to its version" in m for m in logged)
    assert any(m.startswith(f"Restored version {old.pk}") for m in logged)
