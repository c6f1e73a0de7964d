"""`import_vault --prune`: what the folder holds but the source directory no longer does goes to the trash.

The directory is the source of truth for a pruning import, so a note others link to is trashed all the
same (forced); nothing is lost, it can be restored from the trash until it is purged.
"""

from __future__ import annotations

import os
from pathlib import Path

from lensrelay.docstore import folderdoc, trashdoc
from lensrelay.docstore.store import DocStore
from lensrelay.models import Folder
from lensrelay.text.vaultpath import normalize_path
from lensrelay.vault.folder_entries import content_doc_id
from lensrelay.vault.trash import TrashReport, documents_trash


def source_paths(root: Path) -> set[str]:
    """Every file and sub-folder under root, as folder-relative NFC paths; hidden ones (as Obsidian and
    the import leave them out) are not there."""
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel_dir = Path(dirpath).relative_to(root)
        for name in [*dirnames, *(f for f in filenames if not f.startswith("."))]:
            rel = (rel_dir / name).as_posix() if rel_dir != Path(".") else name
            found.add(normalize_path("/" + rel))
    return found


async def vault_prune(*, store: DocStore, root: Path, folder_name: str) -> TrashReport:
    """Move every entry of the folder that is not under root any more to the folder's trash."""
    present = source_paths(root)
    folder = await store.db(Folder.objects.filter(name=folder_name).first)
    if folder is None:
        return TrashReport()
    room = await store.get(folder.doc_id)
    assert room is not None
    entries = folderdoc.entries(room.doc)
    missing = sorted(p for p in entries if not trashdoc.is_trashed(p) and p not in present)
    # A missing sub-folder takes what is in it along: name only the outermost.
    outermost = [p for p in missing if not any(p.startswith(m + "/") for m in missing)]
    doc_ids = [content_doc_id(folder, entries[p].uuid) for p in outermost]
    return await documents_trash(store=store, doc_ids=doc_ids, force=True)
