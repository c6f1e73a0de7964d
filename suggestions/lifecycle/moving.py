"""Moves as suggestions: proposing a move of a document or a sub-folder (checked, nothing changed), and
carrying out accepted moves and deletions (folder entries, and every link that pointed at what moved).

A caller may move something only between folders it may write (its token's folders); the move itself is
`lensrelay.vault.moves.move_entries`, which refuses collisions, a folder moved into itself and invalid targets
with nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from lensrelay.access.auth import Access
from lensrelay.docstore import folderdoc
from lensrelay.docstore.store import DocStore
from lensrelay.text.vaultpath import InvalidPath, split_user_path, with_md_suffix
from lensrelay.vault.moves import FolderRef, MoveRefused, move_entries, plan_move
from lensrelay.vault.paths import DocEntry, PathIndex, path_index
from lensrelay.vault.trash import DeleteRefused, documents_trash, linking_notes
from suggestions.errors import SuggestionError
from suggestions.lifecycle.proposing import Proposer, suggestion_propose_move_or_delete
from suggestions.models import Suggestion


async def remove_document(store: DocStore, entry: DocEntry, *, force: bool = True, by: str = "") -> None:
    """Carry out an accepted delete (or a rejected create): the document goes to its folder's trash.

    Forced by default: the links were checked when the delete was proposed, and the reviewer decided; a
    refusal (`force=False`) is a SuggestionError naming the linking notes, so the decision is not taken.
    """
    try:
        await documents_trash(store=store, doc_ids=[entry.doc_id], force=force, by=by)
    except DeleteRefused as exc:
        raise SuggestionError(f"Error: {exc}") from exc


async def suggestion_propose_delete(
    *,
    store: DocStore,
    access: Access,
    proposer: Proposer,
    entry: DocEntry,
    force: bool = False,
    comment: str | None = None,
) -> Suggestion:
    """A pending delete (to the trash, once accepted). Refused, nothing recorded, while notes the caller
    may see link to the document, naming them, unless `force`.

    Notes in folders the caller cannot see neither refuse nor are counted: any answer that changed with
    them would tell the caller they exist. The reviewer sees every linking note in the admin."""
    if not force:
        linking = await linking_notes(store, doc_ids=[entry.doc_id], access=access)
        if linking:
            raise SuggestionError(f"Error: {DeleteRefused([e.user_path for e in linking])}")
    return await suggestion_propose_move_or_delete(
        store=store, entry=entry, proposer=proposer, new_path=None, comment=comment
    )


async def delete_linking_paths(store: DocStore, *, doc_id: str) -> list[str]:
    """For the reviewer of a delete: every note, in any folder, that still links to the document (what
    the proposing caller was not told about when it could not see them)."""
    return [e.user_path for e in await linking_notes(store, doc_ids=[doc_id])]


# -- which move was asked for ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestedMove:
    entry: DocEntry  # the document, or for a sub-folder an entry standing for it
    source: FolderRef
    target: FolderRef
    new_path: str  # folder-relative
    moves_folder: bool

    @property
    def new_user_path(self) -> str:
        return self.target.name + self.new_path


def _folder_named(index: PathIndex, name: str, access: Access | None) -> FolderRef:
    for folder_id, (folder_name, doc_id) in index.folders.items():
        if folder_name == name and (access is None or access.sees_folder(folder_id)):
            return FolderRef(id=folder_id, name=folder_name, doc_id=doc_id)
    raise SuggestionError(f"Error: Folder not found: {name}. Call info to list the folders you can write to.")


def _folder_ref(index: PathIndex, folder_id: int) -> FolderRef:
    name, doc_id = index.folders[folder_id]
    return FolderRef(id=folder_id, name=name, doc_id=doc_id)


def _split(path: str, *, what: str) -> tuple[str, str]:
    try:
        return split_user_path(path)
    except InvalidPath as exc:
        raise SuggestionError(f"Error: invalid {what} {path!r}: {exc}") from exc


def _sub_folder_entry(index: PathIndex, folder: FolderRef, path: str) -> DocEntry:
    """The sub-folder's own entry, or (for one that never had an entry) one standing for it."""
    found = index.entry_at(folder.name + path)
    if found is not None and found.type == "folder":
        return found
    return DocEntry.of(
        doc_id=folder.doc_id,
        folder_id=folder.id,
        folder_name=folder.name,
        folder_doc_id=folder.doc_id,
        path=path,
        type="folder",
    )


def requested_move(index: PathIndex, access: Access, file_path: str, new_path: str) -> RequestedMove:
    """What ``move {file_path, new_path}`` asks for. A path naming a document moves it (``.md`` may be
    left out of both; a ``new_path`` ending in '/' keeps its name); otherwise, or with a trailing '/',
    it names a sub-folder."""
    entry = None if file_path.endswith("/") else index.resolve(access, file_path)
    if entry is not None:
        if new_path.endswith("/"):
            new_path += entry.path.rpartition("/")[2]
        folder_name, relative = _split(
            with_md_suffix(new_path) if entry.is_markdown else new_path, what="new_path"
        )
        source = _folder_ref(index, entry.folder_id)
        return RequestedMove(entry, source, _folder_named(index, folder_name, access), relative, False)
    name, old = _split(file_path.rstrip("/"), what="file_path")
    source = _folder_named(index, name, access)
    folder_name, relative = _split(new_path.rstrip("/"), what="new_path")
    target = _folder_named(index, folder_name, access)
    return RequestedMove(_sub_folder_entry(index, source, old), source, target, relative, True)


async def _check(store: DocStore, move: RequestedMove) -> None:
    source_room = await store.get(move.source.doc_id)
    target_room = await store.get(move.target.doc_id)
    assert source_room is not None and target_room is not None
    try:
        plan_move(
            source_entries=folderdoc.entries(source_room.doc),
            target_entries=None if move.source == move.target else folderdoc.entries(target_room.doc),
            old=move.entry.path,
            new=move.new_path,
            folder=move.moves_folder,
            names=(move.source.name, move.target.name),
        )
    except MoveRefused as exc:
        raise SuggestionError(f"Error: {exc}") from exc


async def suggestion_propose_move(
    *,
    store: DocStore,
    access: Access,
    proposer: Proposer,
    file_path: str,
    new_path: str,
    comment: str | None = None,
) -> tuple[Suggestion, RequestedMove]:
    """A pending move of a document or a sub-folder, within a folder or into another one the caller may
    write. Refused (nothing recorded) when the move could not be carried out as things stand."""
    if not access.can_suggest:
        raise SuggestionError("This token is read-only (role view): it cannot propose changes.")
    index = path_index(store)
    await index.ensure()
    move = requested_move(index, access, file_path, new_path)
    await _check(store, move)
    suggestion = await suggestion_propose_move_or_delete(
        store=store,
        entry=move.entry,
        proposer=proposer,
        new_path=move.new_user_path,
        comment=comment,
        moves_folder=move.moves_folder,
    )
    return suggestion, move


# -- carrying out an accepted move ------------------------------------------------------------------------


def _follow_pending(doc_ids: list[str], folder_id: int) -> None:
    Suggestion.objects.filter(doc_id__in=doc_ids, status=Suggestion.Status.PENDING).update(
        folder_id=folder_id
    )


async def _carry_out(
    store: DocStore, *, source: FolderRef, old: str, new_user_path: str, moves_folder: bool
) -> int:
    index = path_index(store)
    folder_name, new = _split(new_user_path, what="new_path")
    target = _folder_named(index, folder_name, None)
    try:
        report = await move_entries(
            store, source=source, target=target, old=old, new=new, folder=moves_folder
        )
    except MoveRefused as exc:
        raise SuggestionError(str(exc)) from exc
    if target != source:
        await store.db(_follow_pending, list(report.moved), target.id)
    return report.links_rewritten


async def move_document(store: DocStore, entry: DocEntry, new_user_path: str) -> int:
    """Move the document (into another folder too) and keep every link pointing where it did; returns
    how many links changed."""
    source = _folder_ref(path_index(store), entry.folder_id)
    return await _carry_out(
        store, source=source, old=entry.path, new_user_path=new_user_path, moves_folder=False
    )


async def move_folder(store: DocStore, suggestion: Suggestion) -> int:
    """Carry out an accepted move of a sub-folder and everything under it; returns links changed."""
    index = path_index(store)
    await index.ensure()
    name, old = _split(suggestion.path, what="path")
    source = _folder_named(index, name, None)
    return await _carry_out(
        store, source=source, old=old, new_user_path=suggestion.new_path, moves_folder=True
    )
