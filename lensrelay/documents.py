"""Creating and reading content documents on the live store."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable

from pycrdt import Text

from lensrelay.docstore import folderdoc
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.store import DocStore
from lensrelay.folders import content_doc_id, mirror_folder
from lensrelay.models import Document, Folder, YDoc
from lensrelay.vault import CONTENTS
from lensrelay.vaultpath import validate_relative_path


async def document_create(*, store: DocStore, folder: Folder, path: str, text: str = "") -> Document:
    """Create a markdown document at a folder-relative path: content first, then the folder entry."""
    validate_relative_path(path)
    folder_room = await store.get(folder.doc_id)
    assert folder_room is not None
    if path in folderdoc.entries(folder_room.doc):
        raise FileExistsError(f"{folder.name}{path} already exists")
    uuid = str(uuidlib.uuid4())
    doc_id = content_doc_id(folder, uuid)
    room = await store.create(doc_id, YDoc.Kind.CONTENT)
    if text:
        with room.transact():
            text_insert(room.doc.get(CONTENTS, type=Text), current="", index=0, value=text)
        await room.flushed()
    with folder_room.transact():
        folderdoc.add_entry(folder_room.doc, path=path, uuid=uuid, type="markdown")
    await folder_room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=folder_room)
    return await store.db(Document.objects.select_related("folder").get, doc_id=doc_id)


async def documents_delete(*, store: DocStore, doc_ids: Iterable[str]) -> int:
    """Delete documents the way every client does: remove their entries from their folder documents.

    Every worker, every folder-document client and every view (rows, paths, search) follows from
    there; the documents' stored Yjs states are kept. Returns how many entries were removed.
    """
    wanted = set(doc_ids)
    by_folder = await store.db(_folders_of, wanted)
    removed = 0
    for folder in by_folder:
        room = await store.get(folder.doc_id)
        if room is None:
            continue
        paths = [
            path
            for path, entry in folderdoc.entries(room.doc).items()
            if content_doc_id(folder, entry.uuid) in wanted
        ]
        if paths:
            with room.transact():
                for path in paths:
                    folderdoc.remove_entry(room.doc, path=path)
            await room.flushed()
            removed += len(paths)
        await mirror_folder(store, folder_id=folder.pk, room=room)
    return removed


def _folders_of(doc_ids: set[str]) -> list[Folder]:
    return list(Folder.objects.filter(documents__doc_id__in=doc_ids).distinct())


async def document_text(*, store: DocStore, doc_id: str) -> str:
    room = await store.get(doc_id)
    if room is None:
        raise KeyError(doc_id)
    return str(room.doc.get(CONTENTS, type=Text))
