"""Keeps each folder document's `backlinks_v0` current (target uuid -> source uuids), as Relay clients
expect, a moment after a document's text changes.

Incremental: each store remembers, per folder document, which targets every source links to (built once
from the map, and again only when someone else changed the folder document), so an edit writes the
entries of the links it added or removed and reads nothing else of the folder's map. The derive process
runs it (lensrelay.docstore.derived); with LENSRELAY_DERIVED_WORK=inline the process of the edit does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from lensrelay.docstore import folderdoc
from lensrelay.docstore.derived import derived_inline, derived_view
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
    graph = link_graph(store, index.folder_link_targets(source.folder_id), scope=("folder", source.folder_id))
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
            _linked(store, room, source.uuid, linked, members=lambda: {e.uuid for e in members})
        else:
            # Links recorded before backlinks stayed within a folder: take them out.
            _linked(store, room, source.uuid, set(), members=None)


def _unlisted(store: DocStore) -> dict[str, int]:
    return store.attached(_new_unlisted)


def _new_unlisted(store: DocStore) -> dict[str, int]:
    return {}


def _retry_unlisted(store: DocStore, doc_id: str) -> None:
    """A new note's text may change before its folder entry is mirrored (content is written first):
    look again a little later, a few times, rather than miss its links."""
    room = store.rooms.get(doc_id)
    tries = _unlisted(store)
    # The derive process has no room of the note (it reads stored texts): it tries again all the same.
    if (room is not None and room.kind != "content") or tries.get(doc_id, 0) >= UNLISTED_RETRIES:
        tries.pop(doc_id, None)
        return
    tries[doc_id] = tries.get(doc_id, 0) + 1

    async def again() -> None:
        await asyncio.sleep(DEBOUNCE_SECONDS)
        backlink_indexer(store).add(doc_id)

    store.spawn(again())


class _Known:
    """What one folder document's backlinks_v0 says, by source (source uuid -> target uuids), and the
    folder document's state vector when that was true: any other change (a move, another process's
    write) makes it differ, and the map is read again."""

    def __init__(self, room: Room) -> None:
        self.sources: dict[str, set[str]] = {}
        for target, sources in folderdoc.backlinks(room.doc).items():
            for source in sources:
                self.sources.setdefault(source, set()).add(target)
        self.state = room.doc.get_state()


def _known_maps(store: DocStore) -> dict[str, _Known]:
    return store.attached(_new_known)


def _new_known(store: DocStore) -> dict[str, _Known]:
    return {}


def _linked(
    store: DocStore, room: Room, source: str, targets: set[str], *, members: Callable[[], set[str]] | None
) -> None:
    """Make `source` link to exactly `targets` in the room's backlinks_v0, writing only what differs."""
    known_maps = _known_maps(store)
    known = known_maps.get(room.doc_id)
    if known is None or known.state != room.doc.get_state():
        # First sight, or the folder document changed meanwhile: the whole map once, with its repairs.
        if members is not None:
            _update(room, source, targets, members=members())
        else:
            _forget(room, source)
        known_maps[room.doc_id] = _Known(room)
        return
    before = known.sources.get(source, set())
    if before == targets:
        return
    changes: dict[str, list[str]] = {}
    for target in before ^ targets:
        sources = folderdoc.backlinks_of(room.doc, target=target)
        if target in targets and source not in sources:
            changes[target] = [*sources, source]
        elif target not in targets and source in sources:
            changes[target] = [s for s in sources if s != source]
    _write(room, changes)
    if targets:
        known.sources[source] = set(targets)
    else:
        known.sources.pop(source, None)
    known.state = room.doc.get_state()


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


async def _derive(store: DocStore, doc_ids: frozenset[str]) -> None:
    for doc_id in sorted(doc_ids):
        await reindex(store, doc_id)


derived_view("backlinks", _derive)


@on_change
def _content_changed(room: Room, updates: Sequence[bytes]) -> None:
    # Once, by the process where the edit happened; with a derive process, there.
    if room.kind == "content" and room.changed_here and derived_inline():
        backlink_indexer(room.store).add(room.doc_id)
