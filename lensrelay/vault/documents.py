"""Creating and reading content documents on the live store."""

from __future__ import annotations

import asyncio
import uuid as uuidlib
from collections.abc import Iterable

from pycrdt import Text

from lensrelay.docstore import folderdoc
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.persistence import content_doc_register
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore
from lensrelay.files.blobs import blob_put
from lensrelay.files.kinds import blob_entry_meta, file_kind
from lensrelay.models import Document, Folder, YDoc
from lensrelay.text.vaultpath import FolderPaths, refuse_trash
from lensrelay.vault.folders import content_doc_id, mirror_folder
from lensrelay.vault.importexport import CONTENTS
from lensrelay.vault.trash import documents_trash


async def document_create(
    *, store: DocStore, folder: Folder, path: str, text: str = "", type: str = "markdown"
) -> Document:
    """Create a live text document (a markdown note, or an HTML file with ``type`` "file") at a
    folder-relative path: content first, then the folder entry.

    Raises FileExistsError when the path is taken, InvalidPath when it breaks the path rules.
    """
    folder_room = await store.get(folder.doc_id)
    assert folder_room is not None
    _check_free(folder_room, folder=folder, path=path, type=type)
    uuid = str(uuidlib.uuid4())
    doc_id = content_doc_id(folder, uuid)
    await store.db(content_doc_register, folder=folder, doc_id=doc_id)
    room = await store.create(doc_id, YDoc.Kind.CONTENT)
    if text:
        with room.transact():
            text_insert(room.doc.get(CONTENTS, type=Text), current="", index=0, value=text)
        await room.flushed()
    _check_free(folder_room, folder=folder, path=path, type=type)  # again: the folder may have changed
    entries = folderdoc.entries(folder_room.doc)
    with folder_room.transact():
        # Relay clients and import_vault expect an entry for every sub-folder.
        missing = [parent for parent in folderdoc.parent_paths(path) if parent not in entries]
        folderdoc.add_folder_entries(folder_room.doc, paths=missing)
        folderdoc.add_entry(folder_room.doc, path=path, uuid=uuid, type=type)
    await folder_room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=folder_room)
    return await store.db(Document.objects.select_related("folder").get, doc_id=doc_id)


async def blob_file_create(*, store: DocStore, folder: Folder, path: str, data: bytes) -> str:
    """Create a blob file (JSON, canvas, ...) at a folder-relative path as import_vault does: the blob
    first, then its folder entry with Relay's type for the extension. Returns the new doc id.

    Raises FileExistsError when the path is taken, InvalidPath when it breaks the path rules.
    """
    folder_room = await store.get(folder.doc_id)
    assert folder_room is not None
    kind = file_kind(path)
    _check_free(folder_room, folder=folder, path=path, type=kind)
    uuid = str(uuidlib.uuid4())
    doc_id = content_doc_id(folder, uuid)
    digest = await asyncio.to_thread(blob_put, doc_id=doc_id, data=data)
    _check_free(folder_room, folder=folder, path=path, type=kind)  # again, with no await until written
    entries = folderdoc.entries(folder_room.doc)
    with folder_room.transact():
        missing = [parent for parent in folderdoc.parent_paths(path) if parent not in entries]
        folderdoc.add_folder_entries(folder_room.doc, paths=missing)
        folderdoc.put_entry(
            folder_room.doc, path=path, meta=blob_entry_meta(uuid=uuid, path=path, digest=digest, kind=kind)
        )
    await folder_room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=folder_room)
    return doc_id


async def subfolder_create(*, store: DocStore, folder: Folder, path: str) -> None:
    """Create an empty sub-folder (and the sub-folders it sits in) at a folder-relative path, as Relay
    clients do: a `folder` entry in the folder document. Raises as `document_create` does."""
    folder_room = await store.get(folder.doc_id)
    assert folder_room is not None
    _check_free(folder_room, folder=folder, path=path, type="folder")
    entries = folderdoc.entries(folder_room.doc)
    with folder_room.transact():
        wanted = [*folderdoc.parent_paths(path), path]
        folderdoc.add_folder_entries(folder_room.doc, paths=[p for p in wanted if p not in entries])
    await folder_room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=folder_room)


def _check_free(folder_room: Room, *, folder: Folder, path: str, type: str = "markdown") -> None:
    # First, so a refusal never says whether something is in the trash.
    refuse_trash(path, shown=f"{folder.name}{path}")
    if path in folderdoc.entries(folder_room.doc):
        raise FileExistsError(f"{folder.name}{path} already exists")
    folder_paths(folder_room).check(path, type=type)


def folder_paths(folder_room: Room) -> FolderPaths:
    """Every entry of a folder document (admitted by the mirror or not), to check a new path against:
    a new entry never overwrites or shadows one that is there."""
    return FolderPaths((entry.path, entry.type) for entry in folderdoc.entries(folder_room.doc).values())


async def documents_delete(*, store: DocStore, doc_ids: Iterable[str], force: bool = False) -> int:
    """Delete documents the way every delete goes: to their folders' trash (see `lensrelay.vault.trash`).

    Every worker, every folder-document client and every view (rows, paths, search) follows from the
    folder documents; contents and ids are kept, for a restore. Raises DeleteRefused (nothing changed)
    when other notes link to them, unless `force`. Returns how many entries went to the trash.
    """
    report = await documents_trash(store=store, doc_ids=doc_ids, force=force)
    return len(report.trashed)


async def document_text(*, store: DocStore, doc_id: str) -> str:
    room = await store.get(doc_id)
    if room is None:
        raise KeyError(doc_id)
    return str(room.doc.get(CONTENTS, type=Text))
