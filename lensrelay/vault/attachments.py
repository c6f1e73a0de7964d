"""Writing and reading files that are not markdown documents, through the folder document like every client.

A file's entry in `filemeta_v0` carries its type and, for blob content, the blob's `hash` (with Relay's
`mimetype` and `synctime`); HTML keeps its text in a Y.Text content document instead (see `kinds`). The
entry is written into the live folder document, so the change feed, every worker and every connected
client see the file exactly as if a Relay client had added it.
"""

from __future__ import annotations

import asyncio
import uuid as uuidlib
from typing import Any

from pycrdt import Text

from lensrelay.docstore import folderdoc
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.persistence import content_doc_register
from lensrelay.docstore.store import DocStore
from lensrelay.files.blobs import blob_put
from lensrelay.files.content import attachment_bytes
from lensrelay.files.kinds import FOLDER, MARKDOWN, blob_entry_meta, file_kind, stored_as_text
from lensrelay.models import Document, Folder, YDoc
from lensrelay.text.vaultpath import normalize_path, validate_relative_path
from lensrelay.vault.documents import folder_paths
from lensrelay.vault.folders import content_doc_id, mirror_folder
from lensrelay.vault.importexport import CONTENTS, replace_text

__all__ = ["attachment_bytes", "attachment_write"]


def _as_text(path: str, data: bytes) -> str | None:
    """The text to keep in a Y.Text document, or None when the file is a blob (HTML that is not UTF-8
    is kept as a blob too: its bytes must come back unchanged)."""
    if not stored_as_text(path):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


async def attachment_write(*, store: DocStore, folder: Folder, path: str, data: bytes) -> Document:
    """Create or replace the file at a folder-relative path with `data`; returns its Document row.

    Raises InvalidPath for a path breaking the path rules, ValueError for markdown (written through
    `documents.document_create` and the suggestion flow) and IsADirectoryError for a sub-folder's path.
    """
    path = normalize_path(path)
    validate_relative_path(path)
    if file_kind(path) == MARKDOWN:
        raise ValueError(f"{path} is a markdown document: create it with document_create")
    folder_room = await store.get(folder.doc_id)
    assert folder_room is not None
    existing = folderdoc.entries(folder_room.doc).get(path)
    if existing is not None and existing.type == FOLDER:
        raise IsADirectoryError(f"{folder.name}{path} is a folder")
    text = _as_text(path, data)

    if existing is None:
        folder_paths(folder_room).check(path, type=file_kind(path))
        uuid = str(uuidlib.uuid4())
    else:
        uuid = existing.uuid
    doc_id = content_doc_id(folder, uuid)

    meta: dict[str, Any] | None = None
    if text is not None and not (existing is not None and existing.hash):
        if existing is None:
            await store.db(content_doc_register, folder=folder, doc_id=doc_id)
        room = await store.create(doc_id, YDoc.Kind.CONTENT)
        if existing is None:
            with room.transact():
                text_insert(room.doc.get(CONTENTS, type=Text), current="", index=0, value=text)
        else:
            with room.transact():
                replace_text(room.doc, text)
        await room.flushed()
        if existing is None:
            meta = {"id": uuid, "type": file_kind(path), "version": 0}
    else:
        if existing is None:
            await store.db(content_doc_register, folder=folder, doc_id=doc_id)
        digest = await asyncio.to_thread(blob_put, doc_id=doc_id, data=data)
        if existing is None or existing.hash != digest:
            kind = existing.type if existing is not None else file_kind(path)
            meta = blob_entry_meta(uuid=uuid, path=path, digest=digest, kind=kind)

    if meta is not None:
        if existing is None:
            folder_paths(folder_room).check(path, type=str(meta["type"]))  # the folder may have changed
        entries = folderdoc.entries(folder_room.doc)
        with folder_room.transact():
            missing = [parent for parent in folderdoc.parent_paths(path) if parent not in entries]
            folderdoc.add_folder_entries(folder_room.doc, paths=missing)
            if existing is not None:
                meta = {**folderdoc.entry_meta(folder_room.doc, path=path), **meta}
            folderdoc.put_entry(folder_room.doc, path=path, meta=meta)
        await folder_room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=folder_room)
    return await store.db(Document.objects.select_related("folder").get, doc_id=doc_id)
