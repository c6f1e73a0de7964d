"""Moving a document or a sub-folder with everything under it, within a folder or into another one.

The folder documents are the source of truth, so a move is planned against their live `filemeta_v0`
entries, refused with nothing changed when it cannot be done (a missing source, a collision, a
folder moved into itself, a document where a folder should be, an invalid path), and carried out in
one synchronous stretch: every link that pointed somewhere keeps pointing there (see
`links.rewrite.Relocation`), then the entries move. An entry keeps its `filemeta_v0` value, so the
content document and its id stay the same; across folders (which share the relay id) the entry is
removed from one folder document and added to the other, and the `Document` rows are moved here,
explicitly, rather than left for the mirror to guess.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore import folderdoc, persistence
from lensrelay.docstore.derived import derived_inline
from lensrelay.docstore.folderdoc import FileEntry
from lensrelay.docstore.offsets import text_replace
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import CONTENTS, room_text, text_cache
from lensrelay.links.resolve import LinkIndex, LinkTarget, match_key
from lensrelay.links.rewrite import Relocation, TextEdit
from lensrelay.models import Document, Folder, YDoc
from lensrelay.text.vaultpath import (
    FolderPaths,
    InvalidPath,
    folder_name_key,
    names_trash,
    normalize_path,
    trash_refusal,
    validate_folder_name,
    validate_relative_path,
)
from lensrelay.vault.backlinks import backlink_indexer
from lensrelay.vault.folder_entries import relay_prefix
from lensrelay.vault.folders import folder_name_clash, mirror_folder
from lensrelay.vault.paths import DocEntry, path_index
from lensrelay.webhooks.events import FolderName, Relocated, documents_moved_between


class MoveRefused(ValueError):
    """A move that cannot be done; nothing was changed. The message says why."""


class _FolderChanged(MoveRefused):
    """The folder changed while the move was prepared (another worker's move); nothing was changed."""


# Preparing a move awaits texts and rooms; a move on another worker landing meanwhile makes it start over.
PREPARE_ATTEMPTS = 5


@dataclass(frozen=True)
class FolderRef:
    id: int
    name: str
    doc_id: str


@dataclass(frozen=True)
class MovePlan:
    """Every entry that moves (old folder-relative path -> new) and the sub-folder entries to add."""

    moves: dict[str, str]
    new_folders: tuple[str, ...]


@dataclass
class MoveReport:
    links_rewritten: int = 0
    documents_rewritten: int = 0
    moved: dict[str, str] = field(default_factory=dict)  # doc id -> new folder-relative path


def _other_keys(entries: Mapping[str, FileEntry], leaving: set[str]) -> dict[str, FileEntry]:
    return {match_key(path): entry for path, entry in entries.items() if path not in leaving}


def _sources(entries: Mapping[str, FileEntry], old: str, *, folder: bool, shown: str) -> dict[str, FileEntry]:
    if not folder:
        entry = entries.get(old)
        if entry is None or entry.type == "folder":
            raise MoveRefused(f"{shown} not found.")
        return {old: entry}
    found = {path: entry for path, entry in entries.items() if path == old or path.startswith(old + "/")}
    if not found or (old in found and found[old].type != "folder"):
        raise MoveRefused(f"Folder {shown} not found.")
    return found


def plan_move(
    *,
    source_entries: Mapping[str, FileEntry],
    target_entries: Mapping[str, FileEntry] | None,
    old: str,
    new: str,
    folder: bool,
    names: tuple[str, str] = ("", ""),
) -> MovePlan:
    """Check a move of ``old`` (a document, or with ``folder`` a sub-folder and all under it) to
    ``new``; ``target_entries`` is None within one folder. ``names`` (source, target folder names)
    only make messages readable. Raises MoveRefused; never changes anything."""
    source_name, target_name = names
    same_folder = target_entries is None
    target = source_entries if target_entries is None else target_entries
    try:
        validate_relative_path(new)
    except InvalidPath as exc:
        raise MoveRefused(f"Invalid target: {exc}.") from None
    if names_trash(new):
        raise MoveRefused(f"Invalid target: {trash_refusal(target_name + new)}.")
    moving = _sources(source_entries, old, folder=folder, shown=f"{source_name}{old}")
    if same_folder and new == old:
        raise MoveRefused(f"{source_name}{old} is already there.")
    if same_folder and match_key(new).startswith(match_key(old) + "/"):
        raise MoveRefused(
            f"Invalid target: nothing can move into itself, and {source_name}{new} is inside "
            f"{source_name}{old}."
        )
    if not folder:
        # The vault's path rules, with their own words (case twins, documents inside documents).
        try:
            FolderPaths((path, entry.type) for path, entry in target.items()).check(
                new, type=source_entries[old].type, replacing=old if same_folder else None
            )
        except InvalidPath as exc:
            raise MoveRefused(f"Invalid target: {exc}.") from None
    moves = {path: new + path[len(old) :] for path in moving}
    staying = _other_keys(target, set(moving) if same_folder else set())
    # Sub-folders exist when something is in them, entry or not; the folder being moved does not stay.
    implied = {
        match_key(parent): parent
        for path in target
        for parent in folderdoc.parent_paths(path)
        if not (same_folder and folder and (parent == old or parent.startswith(old + "/")))
    }
    # A moved sub-folder's own path is checked even when it never had an entry.
    for destination in {new, *moves.values()}:
        try:
            validate_relative_path(destination)
        except InvalidPath as exc:
            raise MoveRefused(f"Invalid target: {exc}.") from None
        clash = staying.get(match_key(destination))
        taken = clash.path if clash is not None else implied.get(match_key(destination))
        if taken is not None:
            raise MoveRefused(f"{target_name}{destination} already exists ({target_name}{taken}).")
    # Every folder on the way gets an entry: the target's missing parents, and sub-folders (the moved
    # one included) that never had one of their own.
    new_folders: dict[str, None] = {}  # an ordered set, outermost first
    arriving = set(moves.values())
    for destination in sorted(arriving):
        for parent in folderdoc.parent_paths(destination):
            if parent in arriving or parent in new_folders:
                continue
            existing = staying.get(match_key(parent))
            spelled = existing.path if existing is not None else implied.get(match_key(parent), parent)
            if existing is not None and existing.type != "folder":
                raise MoveRefused(f"Invalid target: {target_name}{spelled} is a document, not a folder.")
            if spelled != parent:
                raise MoveRefused(f"Invalid target: the folder is spelled {target_name}{spelled}.")
            if existing is None:
                new_folders[parent] = None
    return MovePlan(moves=moves, new_folders=tuple(new_folders))


def _move_rows(*, source: FolderRef, target: FolderRef, moves: dict[str, str]) -> None:
    """Across folders: the moved documents' rows follow their entries, keeping their identity."""
    with transaction.atomic():
        # Rows still at the new paths are leftovers of entries already gone from the target document.
        Document.objects.filter(folder_id=target.id, path__in=list(moves.values())).delete()
        now = timezone.now()
        moved: list[Relocated] = []
        for row in Document.objects.select_for_update().filter(folder_id=source.id, path__in=list(moves)):
            Document.objects.filter(pk=row.pk).update(folder_id=target.id, path=moves[row.path], modified=now)
            # The target folder's mirror admits only content its folder owns.
            YDoc.objects.filter(doc_id=row.doc_id, kind=YDoc.Kind.CONTENT).update(folder_id=target.id)
            moved.append(Relocated(row.doc_id, row.type, row.path, moves[row.path]))
        documents_moved_between(
            source=FolderName(source.id, source.name),
            target=FolderName(target.id, target.name),
            changes=moved,
        )


async def _texts_to_rewrite(
    relocation: Relocation, entries: list[DocEntry], texts: dict[str, str]
) -> dict[str, tuple[DocEntry, str, list[TextEdit]]]:
    """The documents whose links need rewriting, with the text the edits were computed on. Yields to
    the event loop now and then: a large vault takes a while, and clients keep editing meanwhile."""
    found: dict[str, tuple[DocEntry, str, list[TextEdit]]] = {}
    for number, entry in enumerate(entries):
        text = texts[entry.doc_id]
        edits = relocation.edits(text, source=entry.link_target) if "[[" in text else []
        if edits:
            found[entry.doc_id] = (entry, text, edits)
        if number % 200 == 199:
            await asyncio.sleep(0)
    return found


def _apply_link_edits(
    room: Room, relocation: Relocation, planned: tuple[DocEntry, str, list[TextEdit]]
) -> int:
    entry, text, edits = planned
    ytext = room.doc.get(CONTENTS, type=Text)
    current = room_text(room)
    if current != text:  # changed since it was read: plan its edits again
        edits = relocation.edits(current, source=entry.link_target)
    if edits:
        with room.transact():
            for edit in reversed(edits):
                current = text_replace(
                    ytext, current=current, start=edit.start, end=edit.end, value=edit.replacement
                )
    return len(edits)


def _link_moves(
    entries: Mapping[str, FileEntry], plan: MovePlan, source: str, target: str
) -> dict[LinkTarget, LinkTarget]:
    return {
        LinkTarget(source, old): LinkTarget(target, new)
        for old, new in plan.moves.items()
        if entries[old].type != "folder"
    }


def moves_lock(store: DocStore) -> asyncio.Lock:
    """Attach to a store (`store.attached(moves_lock)`): moves, trashing and restoring of one process
    run one at a time, since each plans against the whole vault's entries and links."""
    return asyncio.Lock()


async def move_entries(
    store: DocStore, *, source: FolderRef, target: FolderRef, old: str, new: str, folder: bool
) -> MoveReport:
    """Move a document or a sub-folder (``folder``) from ``source`` at ``old`` to ``target`` at
    ``new`` (folder-relative paths), rewriting links everywhere. Raises MoveRefused, changing nothing.

    Moves of one process run one at a time: each plans against the whole vault's links, so two in flight
    (a reviewer accepting several at once) would each find the folder changed by the other."""
    async with store.attached(moves_lock):
        for _ in range(PREPARE_ATTEMPTS - 1):
            with contextlib.suppress(_FolderChanged):
                return await _move_entries(
                    store, source=source, target=target, old=old, new=new, folder=folder
                )
        return await _move_entries(store, source=source, target=target, old=old, new=new, folder=folder)


async def _move_entries(
    store: DocStore, *, source: FolderRef, target: FolderRef, old: str, new: str, folder: bool
) -> MoveReport:
    index = path_index(store)
    await index.ensure()
    source_room = await store.get(source.doc_id)
    target_room = await store.get(target.doc_id)
    if source_room is None or target_room is None:
        raise MoveRefused("Folder not found.")
    if relay_prefix(source.doc_id) != relay_prefix(target.doc_id):
        raise MoveRefused(f"{source.name} and {target.name} belong to different relays.")
    same = source.id == target.id

    def plan() -> MovePlan:
        return plan_move(
            source_entries=folderdoc.entries(source_room.doc),
            target_entries=None if same else folderdoc.entries(target_room.doc),
            old=old,
            new=new,
            folder=folder,
            names=(source.name, target.name),
        )

    first = plan()
    # Links reach every file (embeds of images, PDFs, canvases); only notes hold links to rewrite.
    files = [e for e in index.all_entries() if e.type != "folder"]
    markdown = [e for e in files if e.is_markdown]
    relocation = Relocation(
        LinkIndex(e.link_target for e in files),
        _link_moves(folderdoc.entries(source_room.doc), first, source.name, target.name),
    )
    texts = await text_cache(store).get_many(e.doc_id for e in markdown)
    touched = await _texts_to_rewrite(relocation, markdown, texts)
    rooms = [(planned, await store.get(doc_id)) for doc_id, planned in touched.items()]
    # From here to the entries' move there is no await: what was checked is what gets changed.
    source_entries = folderdoc.entries(source_room.doc)
    if plan() != first:
        raise _FolderChanged("The folder changed while the move was prepared; try again.")
    report = MoveReport()
    for planned, room in rooms:
        if room is not None:
            count = _apply_link_edits(room, relocation, planned)
            report.links_rewritten += count
            report.documents_rewritten += bool(count)
    metas = {path: folderdoc.entry_meta(source_room.doc, path=path) for path in first.moves}
    # The new entries first, so no client ever sees the document without one.
    with target_room.transact():
        folderdoc.add_folder_entries(target_room.doc, paths=first.new_folders)
        for path in first.moves if same else ():
            folderdoc.remove_entry(target_room.doc, path=path)
        for path, meta in metas.items():
            folderdoc.put_entry(target_room.doc, path=first.moves[path], meta=meta)
    if not same:
        with source_room.transact():
            for path in first.moves:
                folderdoc.remove_entry(source_room.doc, path=path)
        # Submitted before any await, so it runs before any mirroring these changes schedule.
        await store.db(_move_rows, source=source, target=target, moves=first.moves)
    prefix = relay_prefix(source.doc_id)
    report.moved = {f"{prefix}-{source_entries[o].uuid}": n for o, n in first.moves.items()}
    for _, room in rooms:
        if room is not None:
            await room.flushed()
    await source_room.flushed()
    await target_room.flushed()
    if not same:
        await mirror_folder(store, folder_id=source.id, room=source_room)
    await mirror_folder(store, folder_id=target.id, room=target_room)
    if derived_inline():
        # backlinks_v0 is keyed by folder: whatever links to a moved document is indexed again. (With a
        # derive process, it reads the folder documents' change and does this there.)
        linking = folderdoc.backlinks(source_room.doc)
        indexer = backlink_indexer(store)
        for moved in source_entries.values() if not same else ():
            if moved.path in first.moves:
                for uuid in linking.get(moved.uuid, []):
                    indexer.add(f"{prefix}-{uuid}")
        for doc_id in [*report.moved, *touched]:
            indexer.add(doc_id)
    return report


def _rename_folder_row(*, folder_id: int, name: str) -> None:
    with transaction.atomic():
        # Checked again in the transaction that writes it (another worker may have taken the name);
        # the unique `name_key` column stops any writer that skips this check.
        Folder.objects.select_for_update().filter(pk=folder_id).first()
        clash = folder_name_clash(name=name, folder_id=folder_id)
        if clash is not None:
            raise MoveRefused(clash)
        try:
            with transaction.atomic():
                Folder.objects.filter(pk=folder_id).update(name=name, name_key=folder_name_key(name))
        except IntegrityError:  # taken by another process since the check
            raise MoveRefused(folder_name_clash(name=name, folder_id=folder_id) or "Name taken.") from None
        # Every process's path index re-reads the folder list (and the renamed folder's paths).
        persistence.announce_folders_changed(writer="folder_rename")


async def folder_rename(store: DocStore, *, folder_id: int, name: str) -> MoveReport:
    """Rename a folder, which moves every user-facing path in it (`Old/Note.md` -> `New/Note.md`):
    links written with the folder's name are rewritten everywhere first, as for any move. Raises
    MoveRefused (nothing changed) for an invalid or taken name."""
    try:
        name = validate_folder_name(normalize_path(name.strip()))
    except InvalidPath as exc:
        raise MoveRefused(f"Invalid folder name: {exc}.") from None
    async with store.attached(moves_lock):
        index = path_index(store)
        await index.ensure()
        if folder_id not in index.folders:
            raise MoveRefused("Folder not found.")
        old_name = index.folders[folder_id][0]
        if old_name == name:
            raise MoveRefused(f"{name} is already its name.")
        # A name equal to another folder's but for case or spelling would retarget the links that are
        # rewritten to it (they resolve case-insensitively): such a rename is refused, nothing changed.
        clash = await store.db(folder_name_clash, name=name, folder_id=folder_id)
        if clash is not None:
            raise MoveRefused(clash)
        markdown = [e for e in index.all_entries() if e.is_markdown]
        relocation = Relocation(
            LinkIndex(e.link_target for e in markdown),
            {e.link_target: LinkTarget(name, e.path) for e in markdown if e.folder_id == folder_id},
        )
        texts = await text_cache(store).get_many(e.doc_id for e in markdown)
        touched = await _texts_to_rewrite(relocation, markdown, texts)
        await store.db(_rename_folder_row, folder_id=folder_id, name=name)
        report = MoveReport()
        for doc_id, planned in touched.items():
            room = await store.get(doc_id)
            if room is not None:
                count = _apply_link_edits(room, relocation, planned)
                report.links_rewritten += count
                report.documents_rewritten += bool(count)
                await room.flushed()
        await index.refresh_folder(folder_id)
        if derived_inline():  # else the derive process reads the rewritten notes from the log
            indexer = backlink_indexer(store)
            for doc_id in touched:
                indexer.add(doc_id)
        return report


async def entry_move(store: DocStore, *, folder_id: int, old: str, new: str, folder: bool) -> MoveReport:
    """Move a document or sub-folder within its folder (folder-relative paths), links following."""
    index = path_index(store)
    await index.ensure()
    if folder_id not in index.folders:
        raise MoveRefused("Folder not found.")
    name, doc_id = index.folders[folder_id]
    here = FolderRef(id=folder_id, name=name, doc_id=doc_id)
    return await move_entries(store, source=here, target=here, old=old, new=new, folder=folder)
