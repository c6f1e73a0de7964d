"""Trash, not deletion: every delete moves entries under `/_trash/`, restore moves them back, purge ends
them; a linked note's delete is refused unless forced; admin renames go through the move services."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import AsyncClient

from lensrelay.access.auth import Access
from lensrelay.docstore import folderdoc, trashdoc
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache
from lensrelay.files.blobs import blob_exists, blob_put
from lensrelay.models import Document, Folder, YDoc, YSnapshot, YUpdate
from lensrelay.search.index import search_indexed
from lensrelay.search.maintain import search_settled
from lensrelay.semantic.models import EmbeddedDocument
from lensrelay.vault.backlinks import backlink_indexer
from lensrelay.vault.documents import document_create, documents_delete
from lensrelay.vault.folders import folder_create, folder_settled, mirror_folder
from lensrelay.vault.importexport import export_vault, import_vault
from lensrelay.vault.moves import MoveRefused, folder_rename
from lensrelay.vault.paths import path_index
from lensrelay.vault.prune import vault_prune
from lensrelay.vault.purge import trash_expired, trash_purge
from lensrelay.vault.trash import DeleteRefused, RestoreRefused, document_restore, documents_trash
from tests.lensrelay.test_change_feed import follow, in_another_process

pytestmark = pytest.mark.django_db(transaction=True)

EVERYONE = Access(name="test", role="admin", folder_ids=None)


async def _vault(store: DocStore) -> tuple[Folder, Document, Document, Document]:
    folder = await sync_to_async(folder_create)(name="Lens")
    target = await document_create(store=store, folder=folder, path="/Notes/Target.md", text="target\n")
    linker = await document_create(store=store, folder=folder, path="/Linker.md", text="see [[Target]]\n")
    alone = await document_create(store=store, folder=folder, path="/Alone.md", text="no links\n")
    await backlink_indexer(store).settled()
    return folder, target, linker, alone


async def _meta(store: DocStore, folder: Folder, path: str) -> dict[str, Any] | None:
    room = await store.get(folder.doc_id)
    assert room is not None
    if path not in folderdoc.entries(room.doc):
        return None
    return folderdoc.entry_meta(room.doc, path=path)


async def _backlinks(store: DocStore, folder: Folder) -> dict[str, list[str]]:
    room = await store.get(folder.doc_id)
    assert room is not None
    return folderdoc.backlinks(room.doc)


async def test_a_linked_note_is_refused_with_its_linkers_then_forced_trashed_and_restored(store: Any) -> None:
    folder, target, linker, _ = await _vault(store)
    index = path_index(store)
    assert (await _backlinks(store, folder))[target.uuid] == [linker.uuid]
    with pytest.raises(DeleteRefused) as refused:
        await documents_trash(store=store, doc_ids=[target.doc_id])
    assert refused.value.linking == ["Lens/Linker.md"]
    assert "Lens/Linker.md" in str(refused.value)
    assert index.resolve(EVERYONE, "Lens/Notes/Target.md") is not None  # nothing changed

    report = await documents_trash(store=store, doc_ids=[target.doc_id], force=True)
    assert report.trashed == {"Lens/Notes/Target.md": "Lens/_trash/Notes/Target.md"}
    assert report.linking == ["Lens/Linker.md"]
    meta = await _meta(store, folder, "/_trash/Notes/Target.md")
    assert meta is not None and meta["id"] == target.uuid
    assert abs(meta[trashdoc.TRASHED_AT] - trashdoc.now_ms()) < 60_000
    assert await _meta(store, folder, "/Notes/Target.md") is None
    row = await Document.objects.aget(doc_id=target.doc_id)
    assert row.path == "/_trash/Notes/Target.md"
    # Invisible: not resolvable, not listed, not a link target.
    assert index.resolve(EVERYONE, "Lens/Notes/Target.md") is None
    assert index.resolve(EVERYONE, "Lens/_trash/Notes/Target.md") is None
    assert target.doc_id not in {e.doc_id for e in index.visible(EVERYONE)}
    await backlink_indexer(store).settled()
    assert target.uuid not in await _backlinks(store, folder)
    await search_settled(store)
    assert target.doc_id not in await store.db(search_indexed)

    restored = await document_restore(store=store, doc_id=target.doc_id)
    assert restored == "Lens/Notes/Target.md"
    meta = await _meta(store, folder, "/Notes/Target.md")
    assert meta is not None and meta["id"] == target.uuid and trashdoc.TRASHED_AT not in meta
    assert index.resolve(EVERYONE, "Lens/Notes/Target") is not None
    await backlink_indexer(store).settled()
    assert (await _backlinks(store, folder))[target.uuid] == [linker.uuid]
    assert await text_cache(store).get(target.doc_id) == "target\n"
    await search_settled(store)
    assert target.doc_id in await store.db(search_indexed)
    # The trash's own sub-folder entries went with it.
    room = await store.get(folder.doc_id)
    assert not [p for p in folderdoc.entries(room.doc) if trashdoc.is_trashed(p)]


async def test_a_restore_onto_a_taken_path_is_refused_and_changes_nothing(store: Any) -> None:
    folder, _, _, alone = await _vault(store)
    await documents_delete(store=store, doc_ids=[alone.doc_id])
    newcomer = await document_create(store=store, folder=folder, path="/Alone.md", text="new one\n")
    with pytest.raises(RestoreRefused, match=r"Cannot restore Lens/Alone.md: .*already exists"):
        await document_restore(store=store, doc_id=alone.doc_id)
    assert (await Document.objects.aget(doc_id=alone.doc_id)).path == "/_trash/Alone.md"
    assert (await Document.objects.aget(doc_id=newcomer.doc_id)).path == "/Alone.md"
    with pytest.raises(RestoreRefused, match="not in the trash"):
        await document_restore(store=store, doc_id=newcomer.doc_id)
    # Trashed again at the same path: the second one gets a place of its own, and both restore.
    await documents_delete(store=store, doc_ids=[newcomer.doc_id])
    second = await Document.objects.aget(doc_id=newcomer.doc_id)
    assert second.path.startswith("/_trash/") and second.path.endswith("/Alone.md")
    assert second.path != "/_trash/Alone.md"
    assert await document_restore(store=store, doc_id=newcomer.doc_id) == "Lens/Alone.md"
    with pytest.raises(RestoreRefused):
        await document_restore(store=store, doc_id=alone.doc_id)


async def test_a_sub_folder_goes_to_the_trash_with_everything_in_it(store: Any) -> None:
    folder, target, _, _ = await _vault(store)
    sub = await Document.objects.aget(folder=folder, path="/Notes")
    # Links from inside the deleted subtree do not hold it back; the linker outside does.
    with pytest.raises(DeleteRefused):
        await documents_trash(store=store, doc_ids=[sub.doc_id])
    report = await documents_trash(store=store, doc_ids=[sub.doc_id], force=True)
    assert set(report.trashed.values()) == {"Lens/_trash/Notes", "Lens/_trash/Notes/Target.md"}
    assert await document_restore(store=store, doc_id=sub.doc_id) == "Lens/Notes"
    assert (await Document.objects.aget(doc_id=target.doc_id)).path == "/Notes/Target.md"


async def test_an_entry_a_client_removes_is_put_back_in_the_trash(store: Any) -> None:
    folder, _, _, alone = await _vault(store)
    room = await store.get(folder.doc_id)
    with room.transact():
        folderdoc.remove_entry(room.doc, path="/Alone.md")
    await room.flushed()
    await folder_settled()
    meta = await _meta(store, folder, "/_trash/Alone.md")
    assert meta is not None and meta["id"] == alone.uuid and meta["type"] == "markdown"
    assert abs(meta[trashdoc.TRASHED_AT] - trashdoc.now_ms()) < 60_000
    assert (await Document.objects.aget(doc_id=alone.doc_id)).path == "/_trash/Alone.md"
    assert await document_restore(store=store, doc_id=alone.doc_id) == "Lens/Alone.md"
    assert await text_cache(store).get(alone.doc_id) == "no links\n"


async def test_purge_is_a_dry_run_until_told_and_then_removes_everything(
    store: Any, own_blob_dir: Path
) -> None:
    folder, target, linker, alone = await _vault(store)
    kept_blob = await store.db(blob_put, doc_id=linker.doc_id, data=b"kept attachment")
    gone_blobs = [await store.db(blob_put, doc_id=alone.doc_id, data=bytes([n]) * 100) for n in range(2)]
    await documents_trash(store=store, doc_ids=[target.doc_id, alone.doc_id], force=True)
    await asyncio.sleep(0.01)
    # Leftovers a purge must remove even so (vectors of a note embedded before it was trashed).
    await EmbeddedDocument.objects.acreate(
        doc_id=alone.doc_id,
        folder_id=folder.pk,
        path="/Alone.md",
        model="m",
        modified=alone.modified.timestamp(),
    )
    assert [p.original for p in await trash_expired(store, older_than_days=1)] == []
    out = io.StringIO()
    await sync_to_async(call_command)("purge_trash", "--older-than", "0", stdout=out)
    assert "Dry run: 2 entries" in out.getvalue() and "Lens/_trash/Alone.md" in out.getvalue()
    assert await Document.objects.filter(doc_id=alone.doc_id).aexists()
    assert all([await store.db(blob_exists, doc_id=alone.doc_id, hash=h) for h in gone_blobs])

    purged = await trash_purge(store, older_than_days=0)
    gone = [alone.doc_id, target.doc_id]
    assert sorted(p.doc_id for p in purged) == sorted(gone)
    assert not await Document.objects.filter(doc_id__in=gone).aexists()
    assert not await YUpdate.objects.filter(doc_id__in=gone).aexists()
    assert not await YSnapshot.objects.filter(doc_id__in=gone).aexists()
    assert not await YDoc.objects.filter(doc_id__in=gone).aexists()
    assert not await EmbeddedDocument.objects.filter(doc_id__in=gone).aexists()
    assert not set(gone) & set(await store.db(search_indexed))
    assert not any([await store.db(blob_exists, doc_id=alone.doc_id, hash=h) for h in gone_blobs])
    assert await store.db(blob_exists, doc_id=linker.doc_id, hash=kept_blob)
    room = await store.get(folder.doc_id)
    assert not [p for p in folderdoc.entries(room.doc) if trashdoc.is_trashed(p)]
    assert target.uuid not in await _backlinks(store, folder)
    # What was not trashed is untouched, and nothing comes back on the next change.
    assert await Document.objects.filter(doc_id=linker.doc_id, path="/Linker.md").aexists()
    await document_create(store=store, folder=folder, path="/Later.md", text="later\n")
    await folder_settled()
    assert not await Document.objects.filter(doc_id__in=gone).aexists()
    await mirror_folder(store, folder_id=folder.pk, room=room)
    assert not [p for p in folderdoc.entries(room.doc) if trashdoc.is_trashed(p)]


async def test_import_prune_trashes_what_the_directory_lost(store: Any, tmp_path: Path) -> None:
    (tmp_path / "Sub").mkdir()
    (tmp_path / "Sub" / "Kept.md").write_text("kept\n")
    (tmp_path / "Gone.md").write_text("gone, linked from [[Kept]]\n")
    (tmp_path / "Old").mkdir()
    (tmp_path / "Old" / "Older.md").write_text("older\n")
    await import_vault(store=store, root=tmp_path, folder_name="Vault")
    (tmp_path / "Gone.md").unlink()
    (tmp_path / "Old" / "Older.md").unlink()
    (tmp_path / "Old").rmdir()
    report = await vault_prune(store=store, root=tmp_path, folder_name="Vault")
    assert sorted(report.trashed) == ["Vault/Gone.md", "Vault/Old", "Vault/Old/Older.md"]
    index = path_index(store)
    assert index.resolve(EVERYONE, "Vault/Sub/Kept.md") is not None
    assert index.resolve(EVERYONE, "Vault/Gone.md") is None
    paths = set(await sync_to_async(list)(Document.objects.values_list("path", flat=True)))
    assert {"/_trash/Gone.md", "/_trash/Old/Older.md", "/Sub/Kept.md"} <= paths
    # Pruning again finds nothing more.
    assert (await vault_prune(store=store, root=tmp_path, folder_name="Vault")).trashed == {}
    # The trash stays on the server: an export is the vault as it is now.
    folder = await Folder.objects.aget(name="Vault")
    out = tmp_path.parent / "exported"
    await sync_to_async(export_vault)(folder=folder, target=out)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == ["Sub", "Sub/Kept.md"]


async def test_nothing_can_be_created_or_moved_into_the_trash(store: Any) -> None:
    folder = await sync_to_async(folder_create)(name="Lens")
    with pytest.raises(ValueError, match="trash"):
        await document_create(store=store, folder=folder, path="/_trash/Sneaky.md", text="x")


# -- the admin ------------------------------------------------------------------------------------------


async def test_the_admin_delete_page_names_the_linking_notes_and_refuses_without_force(
    store: Any, staff_client: AsyncClient
) -> None:
    folder, target, linker, _ = await _vault(store)
    page = await staff_client.get(f"/admin/lensrelay/document/{target.pk}/delete/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Lens/Linker.md" in body and 'name="force"' in body
    refused = await staff_client.post(
        f"/admin/lensrelay/document/{target.pk}/delete/", {"post": "yes"}, follow=True
    )
    assert "Lens/Linker.md" in refused.content.decode() and "Refused" in refused.content.decode()
    assert (await Document.objects.aget(doc_id=target.doc_id)).path == "/Notes/Target.md"
    forced = await staff_client.post(
        f"/admin/lensrelay/document/{target.pk}/delete/", {"post": "yes", "force": "1"}
    )
    assert forced.status_code == 302
    assert (await Document.objects.aget(doc_id=target.doc_id)).path == "/_trash/Notes/Target.md"
    listed = await staff_client.get("/admin/lensrelay/document/?trash=yes")
    assert "Lens/_trash/Notes/Target.md" in listed.content.decode()
    # the trash says when, by whom and from where
    trash_list = listed.content.decode()
    for heading in ("Deleted", "Deleted by", "Deleted from"):
        assert f">{heading}</a>" in trash_list or f"<span>{heading}</span>" in trash_list, heading
    assert '<td class="field-trashed_by">ada</td>' in trash_list
    assert '<td class="field-trashed_from">Lens/Notes/Target.md</td>' in trash_list
    when = r'field-trashed_when"><span title="\d{4}-\d\d-\d\d [\d:]+ UTC">just now</span>'
    assert re.search(when, trash_list)
    assert (await _meta(store, folder, "/_trash/Notes/Target.md") or {}).get("trashed_by") == "ada"
    restored = await staff_client.post(
        "/admin/lensrelay/document/",
        {"action": "restore_selected", "_selected_action": [target.pk]},
        follow=True,
    )
    assert "Restored Lens/Notes/Target.md" in restored.content.decode()
    assert (await Document.objects.aget(doc_id=target.doc_id)).path == "/Notes/Target.md"
    await backlink_indexer(store).settled()
    assert (await _backlinks(store, folder))[target.uuid] == [linker.uuid]


async def test_an_admin_rename_rewrites_incoming_links(store: Any, staff_client: AsyncClient) -> None:
    _, target, linker, _ = await _vault(store)
    response = await staff_client.post(
        f"/admin/lensrelay/document/{target.pk}/change/", {"path": "/Elsewhere/Renamed.md"}, follow=True
    )
    assert response.status_code == 200
    assert "1 link(s) rewritten" in response.content.decode()
    assert (await Document.objects.aget(doc_id=target.doc_id)).path == "/Elsewhere/Renamed.md"
    assert await text_cache(store).get(linker.doc_id) == "see [[Renamed]]\n"
    index = path_index(store)
    assert index.resolve(EVERYONE, "Lens/Elsewhere/Renamed.md") is not None
    assert index.resolve(EVERYONE, "Lens/Notes/Target.md") is None
    # A refused rename (a taken path) changes nothing and says why.
    refused = await staff_client.post(
        f"/admin/lensrelay/document/{target.pk}/change/", {"path": "/Linker.md"}, follow=True
    )
    assert "Not renamed" in refused.content.decode()
    assert (await Document.objects.aget(doc_id=target.doc_id)).path == "/Elsewhere/Renamed.md"


async def test_an_admin_folder_rename_moves_every_path_and_links_naming_it(
    store: Any, staff_client: AsyncClient
) -> None:
    folder, target, _, _ = await _vault(store)
    other = await sync_to_async(folder_create)(name="Other")
    outside = await document_create(
        store=store, folder=other, path="/Out.md", text="see [[Lens/Notes/Target]]\n"
    )
    index = path_index(store)
    await index.ensure()
    response = await staff_client.post(
        f"/admin/lensrelay/folder/{folder.pk}/change/", {"name": "Renamed"}, follow=True
    )
    assert response.status_code == 200
    assert "Renamed to Renamed" in response.content.decode()
    assert (await Folder.objects.aget(pk=folder.pk)).name == "Renamed"
    assert index.resolve(EVERYONE, "Renamed/Notes/Target.md") is not None
    assert index.resolve(EVERYONE, "Lens/Notes/Target.md") is None
    assert await text_cache(store).get(outside.doc_id) == "see [[Renamed/Notes/Target]]\n"
    assert target.doc_id in {e.doc_id for e in index.visible(EVERYONE, scope="Renamed")}


async def test_a_folder_renamed_in_another_process_is_followed_by_this_path_index(store: Any) -> None:
    folder, target, _, _ = await _vault(store)
    index = path_index(store)
    await index.ensure()

    async def rename(other: DocStore) -> None:
        await folder_rename(other, folder_id=folder.pk, name="Elsewhere")

    await in_another_process(rename)
    await follow(store, index, lambda: index.resolve(EVERYONE, "Elsewhere/Notes/Target.md") is not None)
    assert index.resolve(EVERYONE, "Lens/Notes/Target.md") is None
    assert index.by_doc_id(target.doc_id).user_path == "Elsewhere/Notes/Target.md"
    with pytest.raises(MoveRefused, match="already exists"):
        await sync_to_async(folder_create)(name="Taken")
        await folder_rename(store, folder_id=folder.pk, name="Taken")
