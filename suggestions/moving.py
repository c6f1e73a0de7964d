"""Carrying out accepted moves and deletions: folder entries, and the links that point at a moved note."""

from __future__ import annotations

from pycrdt import Text

from lensrelay.docstore import folderdoc
from lensrelay.docstore.offsets import text_delete, text_insert
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore
from lensrelay.documents import folder_paths
from lensrelay.folders import mirror_folder
from lensrelay.links.resolve import LinkIndex, LinkTarget
from lensrelay.links.rewrite import link_edits
from lensrelay.paths import DocEntry, path_index
from lensrelay.texts import CONTENTS
from lensrelay.vaultpath import InvalidPath
from suggestions.errors import SuggestionError


async def _folder_room(store: DocStore, entry: DocEntry) -> Room:
    room = await store.get(entry.folder_doc_id)
    assert room is not None
    return room


async def remove_document(store: DocStore, entry: DocEntry) -> None:
    room = await _folder_room(store, entry)
    with room.transact():
        folderdoc.remove_entry(room.doc, path=entry.path)
    await room.flushed()
    await mirror_folder(store, folder_id=entry.folder_id, room=room)


async def move_document(store: DocStore, entry: DocEntry, new_user_path: str) -> int:
    """Move the entry and rewrite every link that pointed at it; returns how many links changed."""
    index = path_index(store)
    folder_name, _, rest = new_user_path.partition("/")
    if folder_name != entry.folder_name:
        raise SuggestionError("Moving a document to another folder is not supported; keep the folder name.")
    new_relative = "/" + rest
    if index.exists(new_user_path):
        raise SuggestionError(f"{new_user_path} already exists.")
    try:  # the folder may have changed since the move was proposed
        folder_paths(await _folder_room(store, entry)).check(new_relative, replacing=entry.path)
    except InvalidPath as exc:
        raise SuggestionError(f"Cannot move to {new_user_path}: {exc}") from exc
    old_target = LinkTarget(entry.folder_name, entry.path)
    new_target = LinkTarget(entry.folder_name, new_relative)
    link_index = LinkIndex(LinkTarget(e.folder_name, e.path) for e in index.all_entries() if e.is_markdown)
    rewritten = 0
    for other in index.all_entries():
        if not other.is_markdown:
            continue
        room = await store.get(other.doc_id)
        if room is None:
            continue
        ytext = room.doc.get(CONTENTS, type=Text)
        raw = str(ytext)
        source = LinkTarget(other.folder_name, other.path)
        edits = link_edits(raw, source=source, index=link_index, old=old_target, new=new_target)
        if not edits:
            continue
        with room.transact():
            current = raw
            for edit in sorted(edits, key=lambda e: e.start, reverse=True):
                text_delete(ytext, current=current, start=edit.start, end=edit.end)
                current = current[: edit.start] + current[edit.end :]
                text_insert(ytext, current=current, index=edit.start, value=edit.replacement)
                current = current[: edit.start] + edit.replacement + current[edit.start :]
        rewritten += len(edits)
        await room.flushed()
    folder_room = await _folder_room(store, entry)
    with folder_room.transact():
        folderdoc.move_entry(folder_room.doc, old=entry.path, new=new_relative)
    await folder_room.flushed()
    await mirror_folder(store, folder_id=entry.folder_id, room=folder_room)
    return rewritten
