"""Trash, not deletion: every delete moves entries under a folder's `/_trash/`, restore moves them back.

Whoever deletes (the admin, an accepted delete suggestion, `import_vault --prune`; a Yjs client that
removes an entry outright is put right by the folder mirror) the entries keep their ids, so content,
history, blobs and links come back with a restore. The trash is invisible to MCP (glob, grep, read,
search: a trashed path reads as a missing one) and to link resolution, because the path index leaves
it out; the search index and the semantic vectors leave it out too (a restore indexes it again). The
admin lists it ("In the trash"); `manage.py purge_trash` removes it for good (`lensrelay.vault.purge`).

A delete of a note that notes outside what is deleted still link to is refused, naming them, unless
forced: their links would stop resolving.

Each trashed entry says when (`trashed_at`, unix ms, as lens-relay writes it), by whom (`trashed_by`,
the person or service that deleted it, when known) and from where (its original path) — what the admin's
trash list shows (`trash_details`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from lensrelay.access.auth import Access
from lensrelay.docstore import folderdoc, trashdoc
from lensrelay.docstore.derived import derived_inline
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache, view_of
from lensrelay.links.graph import link_graph
from lensrelay.models import Document
from lensrelay.vault.backlinks import backlink_indexer
from lensrelay.vault.folders import mirror_folder
from lensrelay.vault.moves import MoveRefused, moves_lock, plan_move
from lensrelay.vault.paths import DocEntry, path_index

TRASHED_BY = "trashed_by"


class DeleteRefused(ValueError):
    """A delete refused because other notes link to what would be deleted; nothing was changed.

    `linking` names only notes the caller may see: a note in a folder it cannot see neither blocks its
    delete nor is counted, so a refusal (and its wording) never tells it that such a note exists.
    """

    def __init__(self, linking: list[str]) -> None:
        self.linking = linking
        super().__init__(
            f"Refused: {', '.join(linking)} still link to it; delete with force to do it anyway "
            "(the links stay in their text, and work again after a restore)."
        )


class RestoreRefused(ValueError):
    """A restore that cannot be done (the original path is taken, the entry is not in the trash)."""


@dataclass
class TrashReport:
    trashed: dict[str, str] = field(default_factory=dict)  # user path -> user path in the trash
    linking: list[str] = field(default_factory=list)  # notes that link into it (deleted with force)


async def linking_notes(
    store: DocStore, *, doc_ids: Collection[str], access: Access | None = None
) -> list[DocEntry]:
    """Markdown notes, other than `doc_ids`, with a link resolving to one of `doc_ids` (among all
    folders' notes, as links resolve for a token that sees everything; with `access`, among the notes it
    sees and resolved as its own links resolve, so no note it cannot see changes the answer)."""
    index = path_index(store)
    await index.ensure()
    notes = [
        e
        for e in index.all_entries()
        if e.is_markdown and (access is None or access.sees_folder(e.folder_id))
    ]
    scope = (
        "trash:everything" if access is None or access.folder_ids is None else ("trash", access.folder_ids)
    )
    graph = link_graph(store, frozenset(e.link_target for e in notes), scope=scope)
    wanted = {e.link_target for d in doc_ids if (e := index.by_doc_id(d)) is not None}
    if not wanted:
        return []
    candidates = [e for e in notes if e.doc_id not in doc_ids]
    texts = await text_cache(store).get_many(e.doc_id for e in candidates)
    found: list[DocEntry] = []
    for entry in candidates:
        text = view_of(texts[entry.doc_id])
        if "[[" in text and any(
            link.resolution.target in wanted for link in graph.links(entry.link_target, text)
        ):
            found.append(entry)
    return sorted(found, key=lambda e: e.user_path)


def _with_subtrees(index_entries: Iterable[DocEntry], picked: list[DocEntry]) -> set[str]:
    """The doc ids of what is picked and, for sub-folders, everything under them."""
    folders = [(e.folder_id, e.path) for e in picked if e.type == "folder"]
    ids = {e.doc_id for e in picked}
    for entry in index_entries:
        if any(entry.folder_id == fid and entry.path.startswith(path + "/") for fid, path in folders):
            ids.add(entry.doc_id)
    return ids


async def documents_trash(
    *,
    store: DocStore,
    doc_ids: Iterable[str],
    force: bool = False,
    access: Access | None = None,
    by: str = "",
) -> TrashReport:
    """Move documents (and sub-folders with everything in them) to their folders' trash; ``by`` names who
    deleted them (a person, or what did it on their behalf), recorded on each entry.

    Raises DeleteRefused, changing nothing, when notes outside what is deleted link into it and not
    `force`; with `access`, only linking notes in folders it sees refuse (others would be an existence
    oracle; staff see them in the admin). Documents already in the trash or gone are skipped.
    """
    async with store.attached(moves_lock):
        index = path_index(store)
        await index.ensure()
        picked = [e for d in set(doc_ids) if (e := index.by_doc_id(d)) is not None]
        leaving = _with_subtrees(index.all_entries(), picked)
        linking = await linking_notes(store, doc_ids=leaving)
        seen = [e.user_path for e in linking if access is None or access.sees_folder(e.folder_id)]
        if seen and not force:
            raise DeleteRefused(seen)
        report = TrashReport(linking=[e.user_path for e in linking])
        by_folder: dict[int, list[DocEntry]] = {}
        for entry in picked:
            by_folder.setdefault(entry.folder_id, []).append(entry)
        for folder_id, entries in by_folder.items():
            folder_name, folder_doc_id = index.folders[folder_id]
            room = await store.get(folder_doc_id)
            if room is None:
                continue
            stamp = trashdoc.now_ms()
            present = folderdoc.entries(room.doc)
            wanted = [e.path for e in entries if e.path in present and not trashdoc.is_trashed(e.path)]
            moves = trashdoc.trash_destinations(present, wanted, stamp)
            if not moves:
                continue
            with room.transact():
                trashdoc.move_to_trash(room.doc, moves, stamp)
                if by:
                    for trashed_path in moves.values():
                        meta = folderdoc.entry_meta(room.doc, path=trashed_path)
                        folderdoc.put_entry(room.doc, path=trashed_path, meta={**meta, TRASHED_BY: by})
            await room.flushed()
            await mirror_folder(store, folder_id=folder_id, room=room)
            report.trashed.update({folder_name + old: folder_name + new for old, new in moves.items()})
        if derived_inline():
            # The linking notes' backlinks_v0 entries now point nowhere: index them again. (With a
            # derive process, it reads the folder documents' change and does this there.)
            indexer = backlink_indexer(store)
            for entry in linking:
                indexer.add(entry.doc_id)
        return report


async def document_restore(*, store: DocStore, doc_id: str) -> str:
    """Move a trashed document (or sub-folder, with everything trashed with it) back where it was;
    returns its user path. Raises RestoreRefused, changing nothing, when that path is taken."""
    async with store.attached(moves_lock):
        row = await store.db(_trashed_row, doc_id)
        room = await store.get(row.folder.doc_id)
        assert room is not None
        trashed = trashdoc.trashed_entries(room.doc)
        item = trashed.get(row.path)
        if item is None:
            raise RestoreRefused(f"{row.user_path} is not in the trash.")
        entries = folderdoc.entries(room.doc)
        members = [p for p in trashdoc.subtree(entries, item.path)] if item.type == "folder" else [item.path]
        moves = {p: item.original + p[len(item.path) :] for p in members}
        try:
            # The same rules as any move: a path taken, a document where a folder should be.
            plan = plan_move(
                source_entries=entries,
                target_entries=None,
                old=item.path,
                new=item.original,
                folder=item.type == "folder",
                names=(row.folder.name, row.folder.name),
            )
        except MoveRefused as exc:
            raise RestoreRefused(
                f"Cannot restore {row.folder.name}{item.original}: {exc} Move or delete what is there first."
            ) from exc
        with room.transact():
            trashdoc.take_out_of_trash(room.doc, moves, plan.new_folders)
            for empty in trashdoc.empty_trash_folders(room.doc):
                folderdoc.remove_entry(room.doc, path=empty)
        await room.flushed()
        await mirror_folder(store, folder_id=row.folder_id, room=room)
        if derived_inline():
            # backlinks_v0 again, for the restored notes and every note that links to them. (With a
            # derive process, it reads the folder document's change and does this there.)
            index = path_index(store)
            restored = {f"{row.doc_id[:36]}-{entries[p].uuid}" for p in moves}
            indexer = backlink_indexer(store)
            for linking in await linking_notes(store, doc_ids=restored):
                indexer.add(linking.doc_id)
            for restored_id in restored:
                if index.by_doc_id(restored_id) is not None:
                    indexer.add(restored_id)
        return row.folder.name + item.original


def _trashed_row(doc_id: str) -> Document:
    row = Document.objects.select_related("folder").filter(doc_id=doc_id).first()
    if row is None:
        raise RestoreRefused(f"No document {doc_id}.")
    if not trashdoc.is_trashed(row.path):
        raise RestoreRefused(f"{row.user_path} is not in the trash.")
    return row


@dataclass(frozen=True)
class TrashDetails:
    """When, by whom and from where an entry was deleted (None / "" when not known)."""

    trashed_at: datetime | None
    by: str
    original: str


async def trash_details(*, store: DocStore, rows: Iterable[Document]) -> dict[str, TrashDetails]:
    """The trash details of document rows (doc id -> details), read from their folder documents."""
    by_folder: dict[str, list[Document]] = {}
    for row in rows:
        if trashdoc.is_trashed(row.path):
            by_folder.setdefault(row.folder.doc_id, []).append(row)
    found: dict[str, TrashDetails] = {}
    for folder_doc_id, folder_rows in by_folder.items():
        room = await store.get(folder_doc_id)
        if room is None:
            continue
        trashed = trashdoc.trashed_entries(room.doc)
        for row in folder_rows:
            item = trashed.get(row.path)
            if item is None:
                continue
            who = folderdoc.entry_meta(room.doc, path=row.path).get(TRASHED_BY)
            when = datetime.fromtimestamp(item.trashed_at / 1000, tz=UTC) if item.trashed_at else None
            found[row.doc_id] = TrashDetails(
                when, who if isinstance(who, str) else "", row.folder.name + item.original
            )
    return found
