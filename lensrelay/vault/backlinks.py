"""Keeps each folder document's `backlinks_v0` current (target uuid -> source uuids), as Relay clients
expect, a moment after a document's text changes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from lensrelay.docstore import folderdoc
from lensrelay.docstore.later import Later
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, on_change
from lensrelay.docstore.texts import text_cache, view_of
from lensrelay.links.graph import link_graph
from lensrelay.vault.paths import path_index

DEBOUNCE_SECONDS = 1.0
UNLISTED_RETRIES = 5


async def reindex(store: DocStore, doc_id: str) -> None:
    """Bring the folder documents' backlinks_v0 in step with one document's links.

    A folder's backlinks_v0 is readable by everyone who may read its folder document, so it holds only
    links between documents of that folder, resolved among that folder's documents alone.
    """
    index = path_index(store)
    await index.ensure()
    source = index.by_doc_id(doc_id)
    if source is None:
        _retry_unlisted(store, doc_id)
        return
    _unlisted(store).pop(doc_id, None)
    if not source.is_markdown:
        return
    members = index.folder_entries(source.folder_id)
    # Embeds link notes to images, PDFs and canvases too: every file of the folder is a target.
    targets = frozenset(e.link_target for e in members if e.type != "folder")
    graph = link_graph(store, targets, scope=("folder", source.folder_id))
    text = view_of(await text_cache(store).get(doc_id))
    linked: set[str] = set()
    for resolved in graph.links(source.link_target, text):
        target = resolved.resolution.target
        entry = index.entry_at(target.user_path) if target is not None else None
        if entry is not None and entry.doc_id != doc_id and entry.folder_id == source.folder_id:
            linked.add(entry.uuid)
    for folder_id, (_, folder_doc_id) in list(index.folders.items()):
        room = await store.get(folder_doc_id)
        if room is None:
            continue
        if folder_id == source.folder_id:
            _update(room, source.uuid, linked, members={e.uuid for e in members})
        else:
            # Links recorded before backlinks stayed within a folder: take them out.
            _forget(room, source.uuid)


def _unlisted(store: DocStore) -> dict[str, int]:
    return store.attached(_new_unlisted)


def _new_unlisted(store: DocStore) -> dict[str, int]:
    return {}


def _retry_unlisted(store: DocStore, doc_id: str) -> None:
    """A new note's text may change before its folder entry is mirrored (content is written first):
    look again a little later, a few times, rather than miss its links."""
    room = store.rooms.get(doc_id)
    tries = _unlisted(store)
    if room is None or room.kind != "content" or tries.get(doc_id, 0) >= UNLISTED_RETRIES:
        tries.pop(doc_id, None)
        return
    tries[doc_id] = tries.get(doc_id, 0) + 1

    async def again() -> None:
        await asyncio.sleep(DEBOUNCE_SECONDS)
        backlink_indexer(store).add(doc_id)

    store.spawn(again())


def _update(room: Room, source: str, targets: set[str], *, members: set[str]) -> None:
    """Record `source`'s links to `targets`, and drop any entry naming a document of another folder."""
    current = folderdoc.backlinks(room.doc)
    changes: dict[str, list[str]] = {}
    for target, sources in current.items():
        kept = [s for s in sources if s in members and (s != source or target in targets)]
        if target not in members:
            kept = []
        if kept != sources:
            changes[target] = kept
    for target in targets:
        sources = changes.get(target, current.get(target, []))
        if source not in sources:
            changes[target] = [*sources, source]
    _write(room, changes)


def _forget(room: Room, source: str) -> None:
    current = folderdoc.backlinks(room.doc)
    _write(
        room, {t: [s for s in sources if s != source] for t, sources in current.items() if source in sources}
    )


def _write(room: Room, changes: dict[str, list[str]]) -> None:
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
