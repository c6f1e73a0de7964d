"""Keeps each folder document's `backlinks_v0` current (target uuid -> source uuids), as Relay clients
expect, a moment after a document's text changes.

Incremental: each store remembers, per folder document, which targets every source links to (built once
from the map, and again only when someone else changed the folder document), so an edit writes the
entries of the links it added or removed and reads nothing else of the folder's map. The derive process
runs it (lensrelay.docstore.derived); with LENSRELAY_DERIVED_WORK=inline the process of the edit does.

A move, a trash or a restore changes which note an entry is (and whether it is listed) without changing
any text: inline, the process that did it indexes the notes concerned (lensrelay.vault.moves, trash); with
a derive process, `FolderEntriesFollower` reads the folder document's change from the log like any other,
compares its entries with what they were, and indexes the same notes there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pycrdt import Doc, Map, Subscription

from lensrelay.docstore import folderdoc, trashdoc
from lensrelay.docstore.derived import FeedStep, derived_view, state_before
from lensrelay.docstore.later import Debounced
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache, view_of
from lensrelay.links.graph import link_graph
from lensrelay.models import YDoc
from lensrelay.vault.folder_entries import relay_prefix
from lensrelay.vault.folders import mirror_folder
from lensrelay.vault.paths import path_index

logger = logging.getLogger(__name__)

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


async def _derive(store: DocStore, doc_ids: frozenset[str]) -> None:
    for doc_id in sorted(doc_ids):
        with failures_logged(logger, "indexing the backlinks of %s", doc_id):
            await reindex(store, doc_id)


# Once, by the process where a note's text changed (inline, a moment after); with a derive process, there.
BACKLINKS = derived_view("backlinks", handle=_derive, delay=lambda: DEBOUNCE_SECONDS)


def backlink_indexer(store: DocStore) -> Debounced:
    return BACKLINKS.debouncer(store)


# -- after folder changes, in the derive process -----------------------------------------------------------

Paths = dict[str, str]  # entry uuid -> folder-relative path (in the trash too)


def _paths(doc: Doc[Any]) -> Paths:
    return {entry.uuid: entry.path for entry in folderdoc.entries(doc).values()}


def _listed(path: str | None) -> bool:
    return path is not None and not trashdoc.is_trashed(path)


class FolderEntriesFollower:
    """Backlinks after a folder document's entries change: a `feed` view of the derive process.

    Per folder document, the entries as of the last pass (after a restart: rebuilt from the log, as they
    were before the first row read of it). An entry that moved, went to the trash or came back has its
    own links indexed again and those of the notes its folder's backlinks_v0 names as linking to it (as
    the move itself does inline); one that came into the folder (a restore, a move from another folder, a
    new note) may be what a link of any note of the folder means now, so those notes are looked at again.
    A folder whose past the log no longer holds (compacted meanwhile) has all its notes indexed again.
    """

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.paths: dict[str, Paths] = {}
        # The folder rooms whose `filemeta_v0` is observed here, and those it changed in since last read:
        # the derive process's own backlinks writes change a folder document on most passes, and reading
        # 100,000 entries each time to find nothing moved would be most of its work.
        self.watched: dict[str, Room] = {}
        self.touched: set[str] = set()
        self._observers: dict[str, tuple[Map[Any], Subscription]] = {}

    async def step(self, feed: FeedStep) -> None:
        folders = feed.of_kind(YDoc.Kind.FOLDER)
        if not folders:
            return
        index = path_index(self.store)
        await index.ensure()
        folder_ids = {doc_id: folder_id for folder_id, (_, doc_id) in index.folders.items()}
        first_rows: dict[str, int] = {}
        for row in feed.rows:
            first_rows.setdefault(row.doc_id, row.id)
        wanted: set[str] = set()
        for folder_doc_id in sorted(folders):
            room = await self.store.get(folder_doc_id)
            folder_id = folder_ids.get(folder_doc_id)
            if room is None or folder_id is None:
                self.paths.pop(folder_doc_id, None)  # gone, or too new for the index: its notes follow
                continue
            before = self.paths.get(folder_doc_id)
            if before is not None and self.watched.get(folder_doc_id) is room:
                if folder_doc_id not in self.touched:
                    continue
            else:
                self._watch(room)
            self.touched.discard(folder_doc_id)
            now = _paths(room.doc)
            if before is None:
                before = await self._paths_before(folder_doc_id, first_rows.get(folder_doc_id))
            self.paths[folder_doc_id] = now
            if before == now:
                continue  # backlinks written, metadata changed: nothing moved
            # Links resolve against the path index: it must list the entries as they are now.
            await mirror_folder(self.store, folder_id=folder_id, room=room)
            wanted |= await self._concerned(room, folder_id, before, now)
        for doc_id in sorted(wanted):
            entry = index.by_doc_id(doc_id)
            if entry is not None and entry.is_markdown:
                await reindex(self.store, doc_id)

    def _watch(self, room: Room) -> None:
        doc_id = room.doc_id

        def changed(events: list[Any]) -> None:
            self.touched.add(doc_id)

        filemeta: Map[Any] = room.doc.get(folderdoc.FILEMETA, type=Map)
        # The map and its subscription are kept: dropped, the subscription would end.
        self.watched[doc_id] = room
        self._observers[doc_id] = (filemeta, filemeta.observe_deep(changed))

    async def _paths_before(self, folder_doc_id: str, first_row: int | None) -> Paths | None:
        if first_row is None:
            return None  # only a compaction was read: what it folded is unknown
        before = await self.store.db(state_before, doc_id=folder_doc_id, before_id=first_row)
        if before is None:
            return None
        doc: Doc[Any] = Doc()
        if before.state is not None:
            doc.apply_update(before.state)
        return _paths(doc)

    async def _concerned(self, room: Room, folder_id: int, before: Paths | None, now: Paths) -> set[str]:
        prefix = relay_prefix(room.doc_id)
        index = path_index(self.store)
        notes = [entry.doc_id for entry in index.folder_entries(folder_id) if entry.is_markdown]
        if before is None:
            return set(notes)
        changed = {uuid for uuid in before.keys() | now.keys() if before.get(uuid) != now.get(uuid)}
        # Read before anything is indexed again: who linked to the entries as they were.
        linking = folderdoc.backlinks(room.doc)
        concerned: set[str] = set()
        for uuid in changed:
            concerned.add(f"{prefix}-{uuid}")
            concerned.update(f"{prefix}-{source}" for source in linking.get(uuid, []))
        if any(_listed(now.get(uuid)) and not _listed(before.get(uuid)) for uuid in changed):
            texts = await text_cache(self.store).get_many(notes)
            concerned.update(doc_id for doc_id in notes if "[[" in texts[doc_id])
        return concerned


# Inline, the move, trash or restore itself adds the notes concerned to `backlink_indexer`.
derived_view("backlinks after folder changes", feed=FolderEntriesFollower)
