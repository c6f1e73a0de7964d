"""Keeps each folder document's `backlinks_v0` current (target uuid -> source uuids), as Relay clients
expect, a moment after a document's text changes."""

from __future__ import annotations

from collections.abc import Sequence

from lensrelay.docstore import folderdoc
from lensrelay.docstore.later import Later
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, on_change
from lensrelay.links.graph import link_graph
from lensrelay.paths import path_index
from lensrelay.texts import text_cache, view_of

DEBOUNCE_SECONDS = 1.0


async def reindex(store: DocStore, doc_id: str) -> None:
    """Bring every folder's backlinks_v0 in step with one document's links."""
    index = path_index(store)
    await index.ensure()
    source = index.by_doc_id(doc_id)
    if source is None or not source.is_markdown:
        return
    text = view_of(await text_cache(store).get(doc_id))
    graph = link_graph(store, index.link_targets())
    targets_by_folder: dict[str, set[str]] = {}
    for resolved in graph.links(source.link_target, text):
        target = resolved.resolution.target
        entry = index.entry_at(target.user_path) if target is not None else None
        if entry is not None and entry.doc_id != doc_id:
            targets_by_folder.setdefault(entry.folder_doc_id, set()).add(entry.uuid)
    for _, folder_doc_id in list(index.folders.values()):
        room = await store.get(folder_doc_id)
        if room is not None:
            _update(room, source.uuid, targets_by_folder.get(folder_doc_id, set()))


def _update(room: Room, source: str, targets: set[str]) -> None:
    current = folderdoc.backlinks(room.doc)
    changes: dict[str, list[str]] = {}
    for target, sources in current.items():
        if source in sources and target not in targets:
            changes[target] = [s for s in sources if s != source]
    for target in targets:
        sources = current.get(target, [])
        if source not in sources:
            changes[target] = [*sources, source]
    if changes:
        with room.transact():
            for target, sources in changes.items():
                folderdoc.set_backlinks(room.doc, target=target, sources=sources)


def _indexer(store: DocStore) -> Later:
    return Later(store, lambda doc_id: reindex(store, doc_id), delay=lambda: DEBOUNCE_SECONDS)


def backlink_indexer(store: DocStore) -> Later:
    return store.attached(_indexer)


@on_change
def _content_changed(room: Room, updates: Sequence[bytes]) -> None:
    if room.kind == "content" and room.changed_here:  # once, by the process where the edit happened
        backlink_indexer(room.store).add(room.doc_id)
