"""Folders and their documents: creating folders, and keeping `Document` rows in step with `filemeta_v0`.

The folder document is the source of truth for paths. Whoever changes it (a Yjs client, an import, an MCP
write) the rows below follow, so the admin, the API and the path resolver can query them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.dispatch import Signal
from django.utils import timezone
from pycrdt import Doc

from lensrelay.docstore import folderdoc, persistence, trashdoc, versions
from lensrelay.docstore.bulkrows import db_value, insert_rows
from lensrelay.docstore.folderdoc import FileEntry
from lensrelay.docstore.inlists import in_chunks
from lensrelay.docstore.later import Later
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, get_store, on_change, on_load
from lensrelay.models import Document, Folder, YDoc
from lensrelay.search.maintain import search_folder_changed
from lensrelay.semantic.listen import semantic_folder_changed
from lensrelay.text.vaultpath import folder_name_key, normalize_path, validate_folder_name
from lensrelay.vault.folder_entries import admissible_entries, claim_content_docs, content_doc_id
from lensrelay.vault.paths import path_index
from lensrelay.webhooks.events import FolderName, Relocated, documents_relocated

logger = logging.getLogger(__name__)

# Sent with `folder_id` inside the mirroring transaction when markdown documents of the folder appeared,
# went, moved or changed type: once per change, by the process that mirrors it (MCP list notifications).
folder_documents_changed = Signal()
MARKDOWN = "markdown"


class FolderNameTaken(ValueError):
    """A folder name equal to an existing folder's once folded; the message names that folder."""


def folder_name_clash(*, name: str, folder_id: int | None = None) -> str | None:
    """Why `name` cannot be a folder's name (it is, folded, the name of a folder other than
    `folder_id`), or None. Every folder's name is compared, so folders that collided before the
    folded names were kept (their `name_key` is NULL) count too."""
    key = folder_name_key(name)
    others = Folder.objects.exclude(pk=folder_id) if folder_id is not None else Folder.objects.all()
    for other in others.values_list("name", flat=True):
        if other == name:
            return f"A folder named {name} already exists."
        if folder_name_key(other) == key:
            return (
                f"A folder named {other} already exists, and {name} differs from it only by letter case, "
                "Unicode normalisation, percent-encoding or trailing dots and spaces: links (which resolve "
                "case-insensitively) and Obsidian could not tell the two apart."
            )
    return None


def folder_create(*, name: str) -> Folder:
    """Create a folder and its folder document (filemeta_v0, docs, backlinks_v0, folder_config).

    Raises InvalidPath for a name breaking the path rules, FolderNameTaken for one that folds to an
    existing folder's name (see `folder_name_clash`)."""
    name = validate_folder_name(normalize_path(name.strip()))
    doc: Doc[Any] = Doc()
    folderdoc.init_folder_doc(doc, name=name)
    with transaction.atomic():
        clash = folder_name_clash(name=name)
        if clash is not None:
            raise FolderNameTaken(clash)
        try:
            # A savepoint: a name taken meanwhile by another process leaves this transaction usable.
            with transaction.atomic():
                folder = Folder.objects.create(name=name)
        except IntegrityError:
            raise FolderNameTaken(folder_name_clash(name=name) or f"A folder named {name} exists.") from None
        YDoc.objects.create(doc_id=folder.doc_id, kind=YDoc.Kind.FOLDER)
        persistence.append_update(folder.doc_id, doc.get_update(), is_content=False, writer="folder_create")
    return folder


def folder_delete(*, folder: Folder) -> None:
    """Delete a folder and its document rows, and announce it so every worker's views drop it.

    The folder's and its documents' stored Yjs states are kept: nothing stored is lost.
    """
    with transaction.atomic():
        folder.delete()
        persistence.announce_folders_changed(writer="folder_delete")


def sync_folder_documents(
    *, folder_id: int, entries: dict[str, FileEntry], state: bytes | None = None
) -> bool:
    """Mirror a folder's entries into rows (see `folder_rows_mirror`); entries gone, rows gone."""
    return folder_rows_mirror(folder_id=folder_id, entries=entries, state=state)[0]


def folder_rows_mirror(
    *, folder_id: int, entries: dict[str, FileEntry], state: bytes | None = None, keep_lost: bool = False
) -> tuple[bool, list[FileEntry]]:
    """Mirror a folder's entries into `Document` rows: create, rename, retype and delete.

    Only entries naming this folder's own content and passing the path rules become rows (see
    `folder_entries`); a document moves between folders only through a service that checks both.
    `state` is the version of the folder document the entries come from: when the rows already
    mirror that state or a newer one (another worker got there first) nothing is written, so rows never
    step back to an older state and each change is mirrored once. Deleting a row never deletes the
    document's stored Yjs state: nothing stored is lost.

    With `keep_lost`, rows whose id vanished from the folder document altogether (a client removed the
    entry: a delete that bypassed the trash) are kept and returned, so the caller can put them in the
    trash. Only when `state` has seen everything the rows mirror: a worker behind another one must not
    take entries it has not received yet for removed ones. Returns (rows written, rows kept).
    """
    with transaction.atomic():
        folder = Folder.objects.select_for_update().get(pk=folder_id)
        caught_up = _mirrored_state_advance(folder, state)
        if caught_up is None:
            return False, []
        rows = {row.uuid: row for row in Document.objects.select_for_update().filter(folder=folder)}
        admitted = admissible_entries(folder=folder, entries=entries, rows=rows)
        by_uuid = {entry.uuid: entry for entry in admitted.values()}
        lost = _lost_rows(rows, entries) if keep_lost and caught_up else {}
        gone = [row.pk for uuid, row in rows.items() if uuid not in by_uuid and uuid not in lost]
        for pks in in_chunks(gone):
            Document.objects.filter(pk__in=pks).delete()
        moved = [row for uuid, row in rows.items() if uuid in by_uuid and row.path != by_uuid[uuid].path]
        # Park moved rows on unique temporary paths first, so swaps never collide on (folder, path).
        for parked in moved:
            Document.objects.filter(pk=parked.pk).update(path=f"//moving-{parked.pk}")
        now = timezone.now()
        new = {content_doc_id(folder, uuid): entry for uuid, entry in by_uuid.items() if uuid not in rows}
        owned = claim_content_docs(folder=folder, doc_ids=list(new))
        added = {doc_id: entry for doc_id, entry in new.items() if doc_id in owned}
        _rows_insert(folder=folder, entries=added, now=now)
        retyped = _rows_update(rows=rows, by_uuid=by_uuid, now=now)
        listed = [row.type for uuid, row in rows.items() if uuid not in by_uuid]
        if MARKDOWN in listed + [entry.type for entry in added.values()] + retyped:
            folder_documents_changed.send(sender=Folder, folder_id=folder_id)
        # Moves, deletes (into the trash) and restores of every writer, Obsidian's included, become
        # webhook events here, in the transaction that moves the rows: once per change, like the rows.
        documents_relocated(
            folder=FolderName(folder.pk, folder.name),
            changes=[
                Relocated(row.doc_id, by_uuid[row.uuid].type, row.path, by_uuid[row.uuid].path)
                for row in moved
            ],
        )
    return True, list(lost.values())


def _mirrored_state_advance(folder: Folder, state: bytes | None) -> bool | None:
    """None when the rows already mirror `state` or a newer one (nothing to write); else record `state`
    as the one mirrored and say whether it has seen everything the rows mirrored before (caught up)."""
    if state is not None and folder.mirrored_state and versions.covers(bytes(folder.mirrored_state), state):
        return None
    caught_up = state is not None and (
        not folder.mirrored_state or versions.covers(state, bytes(folder.mirrored_state))
    )
    if state is not None:
        Folder.objects.filter(pk=folder.pk).update(mirrored_state=state)
    return caught_up


def _rows_insert(*, folder: Folder, entries: dict[str, FileEntry], now: datetime) -> None:
    """Insert the rows of new entries (by content document id), in bulk."""
    stamp = db_value(now)
    insert_rows(
        Document,
        columns=("folder", "uuid", "doc_id", "path", "type", "hash", "created", "modified"),
        rows=[
            (folder.pk, entry.uuid, doc_id, entry.path, entry.type, entry.hash, stamp, stamp)
            for doc_id, entry in entries.items()
        ],
    )


def _rows_update(*, rows: dict[str, Document], by_uuid: dict[str, FileEntry], now: datetime) -> list[str]:
    """Write the new path, type and hash of rows whose entry changed; returns the types (before and after)
    of the rows that moved or changed type."""
    retyped = []
    for uuid, entry in by_uuid.items():
        existing = rows.get(uuid)
        if existing is not None and (
            existing.path != entry.path or existing.type != entry.type or existing.hash != entry.hash
        ):
            Document.objects.filter(pk=existing.pk).update(
                path=entry.path, type=entry.type, hash=entry.hash, modified=now
            )
            if existing.path != entry.path or existing.type != entry.type:
                retyped += [existing.type, entry.type]
    return retyped


def _lost_rows(rows: dict[str, Document], entries: dict[str, FileEntry]) -> dict[str, FileEntry]:
    """Rows whose id no entry holds any more; a sub-folder counts only once nothing is left in it (a
    client may drop a folder's own entry and keep its contents: the folder is still there)."""
    present = {entry.uuid for entry in entries.values()}
    lost = {
        uuid: FileEntry(path=row.path, uuid=uuid, type=row.type, hash=row.hash)
        for uuid, row in rows.items()
        if uuid not in present
    }
    # The trash's own sub-folders hold nothing: they go when it is emptied.
    return {
        uuid: entry
        for uuid, entry in lost.items()
        if entry.type != "folder"
        or not (trashdoc.is_trashed(entry.path) or any(path.startswith(entry.path + "/") for path in entries))
    }


def _mirror_later(store: DocStore) -> Later:
    """Mirrors folder documents after they change, coalescing bursts of changes."""

    async def mirror(doc_id: str) -> None:
        room = store.rooms.get(doc_id)
        folder_id = await store.db(_folder_id_for_doc, doc_id) if room is not None else None
        if room is not None and folder_id is not None:
            await mirror_folder(store, folder_id=folder_id, room=room)

    return Later(store, mirror, delay=lambda: 0.0)


async def mirror_folder(store: DocStore, *, folder_id: int, room: Room) -> None:
    """Bring the database rows and the path index in step with a folder document, now."""
    state = versions.version(room.doc)
    index = path_index(store)
    # The common case on a restart: the rows already mirror this state and the index read them after
    # (nothing written since). Then nothing follows either: the search and semantic indexes were brought
    # in step by whoever wrote the rows, and their `ready` comparisons catch a crash in between.
    if await store.db(_mirrored, folder_id, state) and await index.rows_current(folder_id):
        return
    entries = folderdoc.entries(room.doc)
    _, lost = await store.db(
        folder_rows_mirror, folder_id=folder_id, entries=entries, state=state, keep_lost=True
    )
    if lost:
        # A client removed entries outright: nothing is deleted but through the trash, so they go back
        # in, under /_trash/, with their content documents (and links) as they were.
        with room.transact():
            placed = trashdoc.put_back_in_trash(room.doc, lost, trashdoc.now_ms())
        logger.info("folder %s: put %d removed entries in the trash: %s", folder_id, len(placed), placed)
        await room.flushed()
        entries, state = folderdoc.entries(room.doc), versions.version(room.doc)
        await store.db(sync_folder_documents, folder_id=folder_id, entries=entries, state=state)
    await index.refresh_folder(folder_id)
    await search_folder_changed(store, folder_id)
    await semantic_folder_changed(store, folder_id)


def _mirrored(folder_id: int, state: bytes) -> bool:
    """Whether the folder's rows mirror `state` or a newer one (they never step back, so no lock)."""
    mirrored = Folder.objects.filter(pk=folder_id).values_list("mirrored_state", flat=True).first()
    return bool(mirrored) and versions.covers(bytes(mirrored), state)  # type: ignore[arg-type]


def _folder_id_for_doc(doc_id: str) -> int | None:
    return Folder.objects.filter(doc_id=doc_id).values_list("id", flat=True).first()


def mirror_for(store: DocStore) -> Later:
    return store.attached(_mirror_later)


@on_change
def _folder_changed(room: Room, updates: Sequence[bytes]) -> None:
    if room.kind == YDoc.Kind.FOLDER:
        mirror_for(room.store).add(room.doc_id)


@on_load
def _folder_loaded(room: Room) -> None:
    if room.kind == YDoc.Kind.FOLDER:
        mirror_for(room.store).add(room.doc_id)


async def folder_settled() -> None:
    """Wait until every scheduled folder mirroring has reached the database."""
    await mirror_for(get_store()).settled()


def doc_scope(doc_id: str) -> tuple[bool, int | None]:
    """(known, folder id) of a document id; standalone documents have no folder."""
    folder_id = _folder_id_for_doc(doc_id)
    if folder_id is not None:
        return True, folder_id
    row = Document.objects.filter(doc_id=doc_id).values_list("folder_id", flat=True).first()
    if row is not None:
        return True, row
    return YDoc.objects.filter(doc_id=doc_id).exists(), None
