"""Moves, deletes and restores become webhook events in the transaction that moves the document rows,
whoever changed the folder document: the services (within and across folders) and a client that renames
an entry itself (as Obsidian does)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.docstore import folderdoc
from lensrelay.models import Folder
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_settled
from lensrelay.vault.moves import FolderRef, entry_move, move_entries
from lensrelay.vault.trash import document_restore, documents_trash
from lensrelay.webhooks.models import WebhookEndpoint, WebhookEvent

pytestmark = pytest.mark.django_db(transaction=True)


def ref(folder: Folder) -> FolderRef:
    return FolderRef(id=folder.pk, name=folder.name, doc_id=folder.doc_id)


def recorded() -> list[tuple[str, dict[str, Any], int | None, int | None]]:
    return [
        (e.type, e.data, e.folder_id, e.other_folder_id)
        for e in WebhookEvent.objects.exclude(type="document.changed").order_by("id")
    ]


@pytest.fixture
def endpoint(transactional_db: None) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(name="all", url="https://hooks.example/", all_folders=True)


async def test_moves_trash_and_restore_are_recorded_once_each(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=lens, path="/Note.md", text="hello")
    await folder_settled()
    assert await sync_to_async(recorded)() == []  # a new document is no move

    await entry_move(store, folder_id=lens.pk, old="/Note.md", new="/Notes/Renamed.md", folder=False)
    await documents_trash(store=store, doc_ids=[note.doc_id], by="ada")
    await document_restore(store=store, doc_id=note.doc_id)
    await folder_settled()
    doc = {"doc_id": note.doc_id, "type": "markdown", "folder": "Lens", "folder_id": lens.pk}
    assert await sync_to_async(recorded)() == [
        (
            "document.moved",
            {
                **doc,
                "path": "/Notes/Renamed.md",
                "user_path": "Lens/Notes/Renamed.md",
                "from": {"folder": "Lens", "folder_id": lens.pk, "path": "/Note.md"},
            },
            lens.pk,
            None,
        ),
        (
            "document.trashed",
            {
                **doc,
                "path": "/Notes/Renamed.md",
                "user_path": "Lens/Notes/Renamed.md",
                "trash_path": "/_trash/Notes/Renamed.md",
            },
            lens.pk,
            None,
        ),
        (
            "document.restored",
            {
                **doc,
                "path": "/Notes/Renamed.md",
                "user_path": "Lens/Notes/Renamed.md",
                "trash_path": "/_trash/Notes/Renamed.md",
            },
            lens.pk,
            None,
        ),
    ]


async def test_a_move_between_folders_names_both(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    edu = await sync_to_async(make_folder)("Edu")
    note = await document_create(store=store, folder=lens, path="/Note.md", text="hello")
    await move_entries(
        store, source=ref(lens), target=ref(edu), old="/Note.md", new="/In Edu.md", folder=False
    )
    await folder_settled()
    assert await sync_to_async(recorded)() == [
        (
            "document.moved",
            {
                "doc_id": note.doc_id,
                "type": "markdown",
                "folder": "Edu",
                "folder_id": edu.pk,
                "path": "/In Edu.md",
                "user_path": "Edu/In Edu.md",
                "from": {"folder": "Lens", "folder_id": lens.pk, "path": "/Note.md"},
            },
            edu.pk,
            lens.pk,
        )
    ]


async def test_a_client_renaming_an_entry_itself_is_a_move(
    store: Any, make_folder: Any, endpoint: WebhookEndpoint
) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=lens, path="/Draft.md", text="x")
    await folder_settled()
    room = await store.get(lens.doc_id)
    with room.transact():
        folderdoc.move_entry(room.doc, old="/Draft.md", new="/Final.md")
    await room.flushed()
    await folder_settled()
    events = await sync_to_async(recorded)()
    assert [(t, d["doc_id"], d["path"], d["from"]["path"]) for t, d, _, _ in events] == [
        ("document.moved", note.doc_id, "/Final.md", "/Draft.md")
    ]


async def test_nothing_is_recorded_without_endpoints(store: Any, make_folder: Any) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=lens, path="/Note.md", text="hello")
    await entry_move(store, folder_id=lens.pk, old="/Note.md", new="/Moved.md", folder=False)
    await documents_trash(store=store, doc_ids=[note.doc_id])
    await folder_settled()
    assert await sync_to_async(WebhookEvent.objects.count)() == 0
