"""Purging the trash: entries trashed longer ago than the retention are removed for good.

What goes: the folder entries, their `Document` rows, the content documents' stored Yjs updates and
snapshots, their blobs (attachments, every version), their search index rows, semantic vectors and
passages, and their `backlinks_v0` records.
Everything else the trash keeps (history, links in other notes' text) has nothing left to point at.
Entries in the trash without a `trashed_at` stamp (put there by a client) are never purged: their age is
unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from lensrelay.docstore import folderdoc, trashdoc, versions
from lensrelay.docstore.store import DocStore
from lensrelay.files.blobs import blob_delete
from lensrelay.models import Document, Folder, YDoc, YSnapshot, YUpdate
from lensrelay.search.index import search_remove_documents
from lensrelay.semantic.models import EmbeddedDocument
from lensrelay.vault.folder_entries import content_doc_id
from lensrelay.vault.folders import mirror_folder

DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class Purgeable:
    user_path: str  # where it is, in the trash
    original: str  # where it was, folder name first
    doc_id: str
    type: str
    trashed_at: int


async def trash_expired(store: DocStore, *, older_than_days: float) -> list[Purgeable]:
    """Entries trashed more than `older_than_days` ago, in every folder."""
    cutoff = trashdoc.now_ms() - int(older_than_days * DAY_MS)
    found: list[Purgeable] = []
    for folder in await store.db(lambda: list(Folder.objects.order_by("name"))):
        room = await store.get(folder.doc_id)
        if room is None:
            continue
        for item in trashdoc.trashed_entries(room.doc).values():
            if item.trashed_at is not None and item.trashed_at < cutoff:
                found.append(
                    Purgeable(
                        user_path=folder.name + item.path,
                        original=folder.name + item.original,
                        doc_id=content_doc_id(folder, item.uuid),
                        type=item.type,
                        trashed_at=item.trashed_at,
                    )
                )
    return found


async def trash_purge(store: DocStore, *, older_than_days: float) -> list[Purgeable]:
    """Remove for good what `trash_expired` finds; returns it."""
    expired = await trash_expired(store, older_than_days=older_than_days)
    folders = await store.db(lambda: {f.name: f for f in Folder.objects.all()})
    for folder in folders.values():
        mine = [p for p in expired if p.user_path.startswith(folder.name + trashdoc.TRASH + "/")]
        if not mine:
            continue
        room = await store.get(folder.doc_id)
        assert room is not None
        paths = [p.user_path[len(folder.name) :] for p in mine]
        with room.transact():
            for path in paths:
                folderdoc.remove_entry(room.doc, path=path)
            trashdoc.forget_links(room.doc, {p.doc_id[37:] for p in mine})
            for empty in trashdoc.empty_trash_folders(room.doc):
                folderdoc.remove_entry(room.doc, path=empty)
        # Before any await: the rows go, and the folder counts as mirrored at this state, in the same
        # transaction, so no mirror (here or on another worker) takes the removed entries for a client's
        # delete and puts them back in the trash.
        await store.db(
            _purge_rows,
            folder_id=folder.pk,
            doc_ids=[p.doc_id for p in mine],
            state=versions.version(room.doc),
        )
        await room.flushed()
        await mirror_folder(store, folder_id=folder.pk, room=room)
        # Last: until here a failed purge leaves the entries, and their blobs with them.
        for item in mine:
            await store.db(blob_delete, doc_id=item.doc_id)
    return expired


def _purge_rows(*, folder_id: int, doc_ids: list[str], state: bytes) -> None:
    with transaction.atomic():
        Folder.objects.select_for_update().filter(pk=folder_id).update(mirrored_state=state)
        Document.objects.filter(folder_id=folder_id, doc_id__in=doc_ids).delete()
        EmbeddedDocument.objects.filter(doc_id__in=doc_ids).delete()  # and their passages
        search_remove_documents(doc_ids=doc_ids)
        YUpdate.objects.filter(doc_id__in=doc_ids).delete()
        YSnapshot.objects.filter(doc_id__in=doc_ids).delete()
        YDoc.objects.filter(doc_id__in=doc_ids, kind=YDoc.Kind.CONTENT).delete()
