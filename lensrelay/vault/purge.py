"""Purging the trash: entries trashed longer ago than the retention are removed for good.

What goes: the folder entries, their `Document` rows, the content documents' stored Yjs updates and
snapshots, their versions, their blobs (attachments, every version), their search index rows, semantic
vectors and passages, their `backlinks_v0` records, and (through `tombstones.documents_purged`) their
suggestions. Links in other notes' text have nothing left to point at. Entries in the trash without a
`trashed_at` stamp (put there by a client) are never purged: their age is unknown.

Purged is gone, also for what is live: every purged id gets a tombstone (`lensrelay.docstore.tombstones`),
so it is never used again, and a marker in the update log tells every process to close the sockets of the
purged documents (4404, "document purged") and drop their rooms, so a lingering client's edit is stored
nowhere.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction

from lensrelay.access.liveaccess import access_watch
from lensrelay.docstore import folderdoc, persistence, trashdoc, versions
from lensrelay.docstore.store import DocStore, on_foreign
from lensrelay.docstore.tombstones import (
    CLOSE_DOCUMENT_PURGED,
    PURGED_REASON,
    documents_purged,
    purged_among,
    tombstones_record,
)
from lensrelay.files.blobs import blob_delete
from lensrelay.models import Document, Folder, PurgedDocument, YDoc, YSnapshot, YUpdate
from lensrelay.search.index import search_remove_documents
from lensrelay.semantic.models import EmbeddedDocument
from lensrelay.vault.folder_entries import content_doc_id
from lensrelay.vault.folders import mirror_folder

logger = logging.getLogger(__name__)

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
        doc_ids = [p.doc_id for p in mine]
        await store.db(
            _purge_rows,
            folder_id=folder.pk,
            doc_ids=doc_ids,
            state=versions.version(room.doc),
            writer=store.writer,
        )
        # This process's own rooms go at once; the others' when their change feed brings the marker.
        await purged_rooms_close(store, doc_ids=doc_ids)
        await room.flushed()
        await mirror_folder(store, folder_id=folder.pk, room=room)
        # Last: until here a failed purge leaves the entries, and their blobs with them.
        for item in mine:
            await store.db(blob_delete, doc_id=item.doc_id)
    return expired


def _purge_rows(*, folder_id: int, doc_ids: list[str], state: bytes, writer: str) -> None:
    with transaction.atomic():
        Folder.objects.select_for_update().filter(pk=folder_id).update(mirrored_state=state)
        Document.objects.filter(folder_id=folder_id, doc_id__in=doc_ids).delete()
        YDoc.objects.filter(doc_id__in=doc_ids, kind=YDoc.Kind.CONTENT).delete()
        documents_erase(doc_ids=doc_ids)
        tombstones_record(doc_ids=doc_ids)
        persistence.announce_documents_purged(writer=writer)


def documents_erase(*, doc_ids: Iterable[str]) -> None:
    """Delete what is stored under these ids besides their rows and blobs: the update log, snapshots,
    versions, search rows, vectors and passages. Run by the purge, and again by each process once it has
    dropped its rooms of them (a change a client made there before that is erased with the rest)."""
    wanted = list(doc_ids)
    with transaction.atomic():
        EmbeddedDocument.objects.filter(doc_id__in=wanted).delete()  # and their passages
        search_remove_documents(doc_ids=wanted)
        YUpdate.objects.filter(doc_id__in=wanted).delete()
        YSnapshot.objects.filter(doc_id__in=wanted).delete()
        documents_purged.send(sender=PurgedDocument, doc_ids=wanted)  # versions, suggestions


async def purged_rooms_close(store: DocStore, *, doc_ids: Iterable[str] | None = None) -> list[str]:
    """Close the sockets and drop the rooms this process has of purged documents (of `doc_ids`, known to
    be purged; None: whichever loaded rooms have a tombstone), then erase what they may have logged
    meanwhile. Returns the ids whose rooms were dropped."""
    if doc_ids is None:
        loaded = [doc_id for doc_id, room in store.rooms.items() if room.kind != YDoc.Kind.FOLDER]
        purged = await store.db(purged_among, loaded) if loaded else set()
    else:
        purged = set(doc_ids)
    dropped: list[str] = []
    watch = access_watch(store)
    for doc_id in sorted(purged):
        room = store.rooms.get(doc_id)
        if room is None:
            continue
        for peer in list(room.clients):
            # The sockets' own cut-off (as when their token is revoked): they leave the room, then close.
            closing = getattr(peer, "access_lost", None)
            watch.discard(peer)  # type: ignore[arg-type]
            if closing is not None:
                await closing(code=CLOSE_DOCUMENT_PURGED, reason=PURGED_REASON)
        await store.evict(doc_id)
        dropped.append(doc_id)
    if dropped:
        logger.info("dropped the rooms of %d purged documents: %s", len(dropped), dropped)
        await store.db(documents_erase, doc_ids=dropped)
        for doc_id in dropped:
            store.notify_foreign(doc_id)  # caches of its text (text cache, indexes) forget it
    return dropped


@on_foreign
def _purge_announced(store: DocStore, doc_id: str) -> None:
    if doc_id == persistence.DOCUMENTS_PURGED:
        store.spawn(purged_rooms_close(store))
