"""One change feed: folders and deletions made anywhere reach every process's views.

"Another process" is a second document store on its own event loop in a thread (as a management command
or another worker has), logging under its own writer name; this test's store learns of its changes only
through the update log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.access.auth import Access
from lensrelay.docstore import folderdoc, versions
from lensrelay.docstore.store import DocStore, get_store
from lensrelay.models import Document, Folder
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create, mirror_for, sync_folder_documents
from lensrelay.vault.importexport import import_vault
from lensrelay.vault.paths import PathIndex, path_index

pytestmark = pytest.mark.django_db(transaction=True)

EVERYONE = Access(name="test", role="admin", folder_ids=None)
T = TypeVar("T")


async def in_another_process(work: Callable[[DocStore], Awaitable[T]]) -> T:
    """Run store work on a store of its own (another loop, another writer), closed afterwards."""

    async def run() -> T:
        other = get_store()
        try:
            return await work(other)
        finally:
            await other.close()

    return await asyncio.to_thread(asyncio.run, run())


async def follow(store: DocStore, index: PathIndex, until: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll the log like the maintenance loop does until the index shows the change."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not until():
        assert asyncio.get_running_loop().time() < deadline, "the change never reached this process"
        await store.catch_up()
        await mirror_for(store).settled()
        await asyncio.sleep(0.05)


async def test_a_folder_imported_by_another_process_becomes_visible(store: Any, tmp_path: Path) -> None:
    index = path_index(store)
    await index.ensure()
    (tmp_path / "Sub").mkdir()
    (tmp_path / "Sub" / "Hello.md").write_text("hello from elsewhere\n")
    await in_another_process(lambda other: import_vault(store=other, root=tmp_path, folder_name="Brand New"))
    await follow(store, index, lambda: index.resolve(EVERYONE, "Brand New/Sub/Hello.md") is not None)
    assert "Brand New" in [name for _, name in index.visible_folders(EVERYONE)]
    entry = index.resolve(EVERYONE, "Brand New/Sub/Hello")
    assert entry is not None and entry.user_path == "Brand New/Sub/Hello.md"


async def test_a_folder_created_elsewhere_then_filled_is_followed(store: Any) -> None:
    index = path_index(store)
    await index.ensure()
    folder = await sync_to_async(folder_create)(name="Later")
    await follow(store, index, lambda: any(name == "Later" for _, name in index.visible_folders(EVERYONE)))
    await in_another_process(
        lambda other: document_create(store=other, folder=folder, path="/A.md", text="a")
    )
    await follow(store, index, lambda: index.resolve(EVERYONE, "Later/A.md") is not None)


async def test_an_admin_delete_goes_through_the_folder_document(
    store: Any, staff_client: AsyncClient
) -> None:
    folder = await sync_to_async(folder_create)(name="Lens")
    doomed = await document_create(store=store, folder=folder, path="/Doomed.md", text="bye")
    await document_create(store=store, folder=folder, path="/Kept.md", text="stay")
    index = path_index(store)
    await index.ensure()
    response = await staff_client.post(f"/admin/lensrelay/document/{doomed.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    folder_room = await store.get(folder.doc_id)
    assert "/Doomed.md" not in folderdoc.entries(folder_room.doc)
    assert "/Kept.md" in folderdoc.entries(folder_room.doc)
    # Into the trash: its row follows its entry there, and it is nowhere to be found.
    assert "/_trash/Doomed.md" in folderdoc.entries(folder_room.doc)
    assert (await Document.objects.aget(doc_id=doomed.doc_id)).path == "/_trash/Doomed.md"
    assert index.resolve(EVERYONE, "Lens/Doomed.md") is None
    assert index.by_doc_id(doomed.doc_id) is None
    # The next folder change must not bring it back (it once did: only the row had been deleted).
    await document_create(store=store, folder=folder, path="/New.md", text="new")
    assert not await Document.objects.filter(folder=folder, path="/Doomed.md").aexists()
    assert index.resolve(EVERYONE, "Lens/Doomed.md") is None
    assert index.resolve(EVERYONE, "Lens/Kept.md") is not None


async def test_an_admin_bulk_delete_reaches_another_process(store: Any, staff_client: AsyncClient) -> None:
    folder = await sync_to_async(folder_create)(name="Lens")
    docs = [
        await document_create(store=store, folder=folder, path=f"/N{n}.md", text=str(n)) for n in range(3)
    ]
    index = path_index(store)
    await index.ensure()
    seen_elsewhere = await in_another_process(_resolves_all)
    assert seen_elsewhere == {"Lens/N0.md", "Lens/N1.md", "Lens/N2.md"}
    response = await staff_client.post(
        "/admin/lensrelay/document/",
        {"action": "delete_selected", "_selected_action": [docs[0].pk, docs[1].pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert await in_another_process(_resolves_all) == {"Lens/N2.md"}


async def _resolves_all(other: DocStore) -> set[str]:
    index = path_index(other)
    await index.ensure()
    await mirror_for(other).settled()
    return {e.user_path for e in index.visible(EVERYONE)}


async def test_an_admin_folder_delete_reaches_another_process(store: Any, staff_client: AsyncClient) -> None:
    folder = await sync_to_async(folder_create)(name="Gone")
    await document_create(store=store, folder=folder, path="/X.md", text="x")
    index = path_index(store)
    await index.ensure()
    assert index.resolve(EVERYONE, "Gone/X.md") is not None
    # Deleting a folder touches no live document: the store hears of it through the log alone.
    response = await staff_client.post(f"/admin/lensrelay/folder/{folder.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not await Folder.objects.filter(pk=folder.pk).aexists()
    await follow(store, index, lambda: index.resolve(EVERYONE, "Gone/X.md") is None)
    assert all(name != "Gone" for _, name in index.visible_folders(EVERYONE))


async def test_rows_never_step_back_to_an_older_folder_state(store: Any) -> None:
    folder = await sync_to_async(folder_create)(name="Lens")
    room = await store.get(folder.doc_id)
    old_state, old_entries = versions.version(room.doc), folderdoc.entries(room.doc)
    await document_create(store=store, folder=folder, path="/Newer.md", text="n")
    # A worker that has not yet caught up mirrors what it has: nothing is written.
    wrote = await store.db(sync_folder_documents, folder_id=folder.pk, entries=old_entries, state=old_state)
    assert wrote is False
    assert await Document.objects.filter(folder=folder, path="/Newer.md").aexists()
    # The state already mirrored is not mirrored twice.
    current = await store.db(
        sync_folder_documents,
        folder_id=folder.pk,
        entries=folderdoc.entries(room.doc),
        state=versions.version(room.doc),
    )
    assert current is False
