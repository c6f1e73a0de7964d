"""Non-markdown entries (images, PDFs, canvases) in a live folder document, as a Relay client adds them."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from lensrelay.docstore import folderdoc
from lensrelay.models import Document
from lensrelay.vault.folders import mirror_folder


async def add_file_entry(store: Any, folder: Any, path: str, type: str) -> Document:
    """A filemeta entry of ``type`` at ``path`` (its parents' folder entries too), mirrored into a row."""
    room = await store.get(folder.doc_id)
    entries = folderdoc.entries(room.doc)
    uuid = str(uuidlib.uuid4())
    with room.transact():
        missing = [parent for parent in folderdoc.parent_paths(path) if parent not in entries]
        folderdoc.add_folder_entries(room.doc, paths=missing)
        folderdoc.add_entry(room.doc, path=path, uuid=uuid, type=type)
    await room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=room)
    return await Document.objects.select_related("folder").aget(folder_id=folder.pk, path=path)
