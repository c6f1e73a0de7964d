"""A purge takes the purged note's suggestions with it (they hold its text); others stay."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create
from lensrelay.vault.purge import trash_purge
from lensrelay.vault.trash import documents_trash
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)


async def test_purging_a_note_deletes_its_suggestions_and_keeps_the_others(store: Any) -> None:
    folder = await sync_to_async(folder_create)(name="Lens")
    doomed = await document_create(store=store, folder=folder, path="/Doomed.md", text="code 4711\n")
    kept = await document_create(store=store, folder=folder, path="/Kept.md", text="kept\n")
    for note in (doomed, kept):
        for status in (Suggestion.Status.PENDING, Suggestion.Status.ACCEPTED):
            await Suggestion.objects.acreate(
                folder=folder,
                document=note,
                doc_id=note.doc_id,
                path=f"Lens{note.path}",
                author="claude",
                tool="edit",
                old_text="code 4711",
                new_text="code 0000",
                status=status,
            )
    await documents_trash(store=store, doc_ids=[doomed.doc_id], force=True)
    await asyncio.sleep(0.01)
    await trash_purge(store, older_than_days=0)
    assert not await Suggestion.objects.filter(doc_id=doomed.doc_id).aexists()
    assert await Suggestion.objects.filter(doc_id=kept.doc_id).acount() == 2
