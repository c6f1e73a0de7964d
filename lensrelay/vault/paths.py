"""User-facing paths (`Lens/Notes/Ideas.md`) to documents: an in-memory index kept current per folder.

Built once from the database, then refreshed one folder at a time whenever that folder's entries are
mirrored, so resolving a path never scans all documents. Folders created or deleted anywhere (another
worker, the admin, `import_vault` in its own process) announce themselves in the update log: a logged
document this index does not know makes it re-read the folder list, and load new folders' documents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import NamedTuple

from django.core.exceptions import EmptyResultSet
from django.db import connections

from lensrelay.access.auth import Access
from lensrelay.docstore.later import Later
from lensrelay.docstore.store import DocStore, on_foreign
from lensrelay.docstore.trashdoc import TRASH
from lensrelay.links.resolve import LinkTarget
from lensrelay.models import Document, Folder
from lensrelay.text.vaultpath import InvalidPath, has_md_suffix, split_user_path


class DocEntry(NamedTuple):
    """A document (or sub-folder) of the index: immutable and hashable.

    A named tuple rather than a frozen dataclass: a restart builds 100,000 of them before its first answer,
    and a tuple is made in one C call (see `_rows`) where the dataclass took one call per field.
    """

    doc_id: str
    folder_id: int
    folder_name: str
    folder_doc_id: str
    path: str  # folder-relative, leading slash
    type: str
    # folder_name + path, computed once: tools compare it for every document on every call. Build
    # entries with `DocEntry.of`, which computes it.
    user_path: str

    @classmethod
    def of(
        cls, *, doc_id: str, folder_id: int, folder_name: str, folder_doc_id: str, path: str, type: str
    ) -> DocEntry:
        return cls(doc_id, folder_id, folder_name, folder_doc_id, path, type, f"{folder_name}{path}")

    @property
    def is_markdown(self) -> bool:
        return self.type == "markdown"

    @property
    def link_target(self) -> LinkTarget:
        return LinkTarget(folder=self.folder_name, path=self.path)

    @property
    def uuid(self) -> str:
        return self.doc_id[37:]  # "{relay id}-{uuid}"


def _rows(folder_ids: Iterable[int] | None = None) -> list[DocEntry]:
    # One compact query (tuples, not model instances): at 100,000 documents this is what a restart
    # waits for before its first answer. What is in a folder's trash is nowhere to be found: not by
    # tools, not by links (see lensrelay.vault.trash).
    folders = dict(_folders_by_id())
    documents = Document.objects.exclude(path=TRASH).exclude(path__startswith=TRASH + "/")
    if folder_ids is not None:
        documents = documents.filter(folder_id__in=list(folder_ids))
    # Django's query, fetched on a plain cursor: its per-row iteration was half of this read's CPU.
    query = documents.values_list("doc_id", "folder_id", "path", "type")
    try:
        sql, params = query.query.sql_with_params()
    except EmptyResultSet:  # no folder asked for
        return []
    with connections[query.db].cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    # DocEntry.of(...) for each row, each entry made in one C call (no Python-level __new__): 100,000
    # of them before a restart's first answer. A folder deleted between the two queries: its rows are
    # going too.
    make = tuple.__new__
    entries: list[DocEntry] = [
        make(DocEntry, (doc_id, folder_id, folder[0], folder[1], path, type_, folder[0] + path))
        for doc_id, folder_id, path, type_ in found
        if (folder := folders.get(folder_id)) is not None
    ]
    return entries


def _folders_by_id() -> Iterable[tuple[int, tuple[str, str]]]:
    return ((fid, (name, doc_id)) for fid, name, doc_id in _folders())


def _folders() -> list[tuple[int, str, str]]:
    return list(Folder.objects.values_list("id", "name", "doc_id"))


def _mirrored_states(folder_ids: Iterable[int] | None = None) -> dict[int, bytes]:
    folders = Folder.objects.all()
    if folder_ids is not None:
        folders = folders.filter(id__in=list(folder_ids))
    return {fid: bytes(state) for fid, state in folders.values_list("id", "mirrored_state")}


def _rows_with_states(folder_ids: Iterable[int] | None = None) -> tuple[dict[int, bytes], list[DocEntry]]:
    # The mirrored states are read first: rows mirrored meanwhile are newer than the state says, never
    # older, so `rows_current` can only err towards reading them again.
    return _mirrored_states(folder_ids), _rows(folder_ids)


# The longest the folder documents' load waits for the task that built the index (a request) to finish.
FOLDER_DOCS_WAIT = 1.0


class PathIndex:
    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.loaded = False
        self.folders: dict[int, tuple[str, str]] = {}  # id -> (name, folder doc id)
        self._by_path: dict[str, DocEntry] = {}
        self._by_doc_id: dict[str, DocEntry] = {}
        self._folders_changed = Later(store, lambda _: self.refresh_folders(), delay=lambda: 0.0)
        self._folder_docs: asyncio.Future[None] = store.loop.create_future()
        self._folder_docs.set_result(None)
        self._folder_docs_start = asyncio.Event()
        # Per folder, the folder document state its rows mirrored when this index last read them.
        self._seen_states: dict[int, bytes] = {}
        # Bumped on every change, so what is derived from the entries can be kept until it moves.
        self.generation = 0
        # Per folder, its entries and link targets, as of `generation` (backlinks ask once per edit).
        self._folder_views: dict[int, tuple[int, list[DocEntry], frozenset[LinkTarget]]] = {}

    async def ensure(self) -> None:
        if self.loaded:
            failed = self._folder_docs.done() and (
                self._folder_docs.cancelled() or self._folder_docs.exception() is not None
            )
            if failed:
                self._folder_docs = self.store.spawn(self._load_folder_docs())
            return
        await self.store.start_feed()  # from now on, whatever another process logs is seen here
        folders, (states, rows) = await self.store.db(_folders), await self.store.db(_rows_with_states)
        self.folders = {fid: (name, doc_id) for fid, name, doc_id in folders}
        self._seen_states = states
        self._replace(rows, folder_ids=None)
        self.loaded = True
        # Folder documents stay loaded, so changes made through any worker reach this index. Loading
        # one of 100,000 entries takes seconds of the event loop, and the rows already answer, so the
        # load starts once the task that needed the index has finished (its answer is sent), or when
        # anyone asks for it (`folders_loaded`), or after FOLDER_DOCS_WAIT if that task lives on. What
        # changes meanwhile is not lost: the loaded document holds it, and its mirroring re-reads the
        # rows unless nobody has written them since they were read here.
        start = self._folder_docs_start = asyncio.Event()
        caller = asyncio.current_task()
        if caller is not None:
            caller.add_done_callback(lambda _: start.set())
        self.store.loop.call_later(FOLDER_DOCS_WAIT, start.set)
        self._folder_docs = self.store.spawn(self._load_folder_docs(start))

    async def _load_folder_docs(self, start: asyncio.Event | None = None) -> None:
        if start is not None:
            await start.wait()
            await asyncio.sleep(0)  # the loop writes the answer out before this holds it
        for _, doc_id in list(self.folders.values()):
            await self.store.get(doc_id)

    async def folders_loaded(self, *, now: bool = True) -> None:
        """Wait until every folder document known at start is loaded (and so followed) here; with
        ``now``, start that load at once rather than after the answer that needed the index."""
        await self.ensure()
        if now:
            self._folder_docs_start.set()
        await asyncio.shield(self._folder_docs)

    def logged_elsewhere(self, doc_id: str) -> None:
        """Another process logged a change to a document not loaded here: maybe a new folder's."""
        known_folder = any(folder_doc_id == doc_id for _, folder_doc_id in self.folders.values())
        if self.loaded and doc_id not in self._by_doc_id and not known_folder:
            self._folders_changed.add("folders")

    async def refresh_folders(self) -> None:
        """Re-read the folder list: load new folders' documents (which mirrors them), drop deleted ones."""
        folders = {fid: (name, doc_id) for fid, name, doc_id in await self.store.db(_folders)}
        gone = set(self.folders) - set(folders)
        new = [doc_id for fid, (_, doc_id) in folders.items() if fid not in self.folders]
        # A renamed folder moves every path in it: its entries are read again under the new name.
        renamed = {
            fid for fid, (name, _) in folders.items() if fid in self.folders and self.folders[fid][0] != name
        }
        if folders != self.folders:
            self.folders, self.generation = folders, self.generation + 1
        if gone:
            self._replace([], folder_ids=gone)
        if renamed:
            self._replace(await self.store.db(_rows, renamed), folder_ids=renamed)
        for doc_id in new:
            await self.store.get(doc_id)

    async def refresh_folder(self, folder_id: int) -> None:
        if not self.loaded:
            return
        self.folders = {fid: (name, doc_id) for fid, name, doc_id in await self.store.db(_folders)}
        states, rows = await self.store.db(_rows_with_states, [folder_id])
        self._seen_states.update(states)
        self._replace(rows, folder_ids={folder_id})

    async def rows_current(self, folder_id: int) -> bool:
        """Whether this index holds the folder's rows as they are now: no mirroring (here or in another
        process) has written them since it read them. Lets a folder document that loads with nothing
        new to mirror skip re-reading 100,000 rows."""
        if not self.loaded or folder_id not in self._seen_states:
            return False
        states = await self.store.db(_mirrored_states, [folder_id])
        return states.get(folder_id) == self._seen_states[folder_id]

    def _replace(self, rows: list[DocEntry], *, folder_ids: set[int] | None) -> None:
        self.generation += 1
        if folder_ids is None:
            self._by_path = {entry.user_path: entry for entry in rows}
            self._by_doc_id = {entry.doc_id: entry for entry in rows}
            return
        for entry in [e for e in self._by_doc_id.values() if e.folder_id in folder_ids]:
            self._by_doc_id.pop(entry.doc_id, None)
            self._by_path.pop(entry.user_path, None)
        for entry in rows:
            self._by_path[entry.user_path] = entry
            self._by_doc_id[entry.doc_id] = entry

    def resolve(self, access: Access, user_path: str) -> DocEntry | None:
        """The document at a user-facing path the caller may see; `.md` may be omitted.

        Paths outside the caller's folders resolve exactly like missing ones.
        """
        try:
            folder, relative = split_user_path(user_path)
        except InvalidPath:
            return None
        candidates = [f"{folder}{relative}"]
        if not has_md_suffix(relative):
            candidates.append(f"{folder}{relative}.md")
        for candidate in candidates:
            entry = self._by_path.get(candidate)
            if entry is not None and entry.type != "folder" and access.sees_folder(entry.folder_id):
                return entry
        return None

    def exists(self, user_path: str) -> bool:
        """Whether anything (document or sub-folder) is at this exact path, whoever may see it."""
        return user_path in self._by_path

    def by_doc_id(self, doc_id: str) -> DocEntry | None:
        return self._by_doc_id.get(doc_id)

    def visible(self, access: Access, *, scope: str | None = None, files: bool = False) -> list[DocEntry]:
        """Markdown documents the caller may see, optionally under a folder or sub-folder path; with
        ``files``, every file entry (images, PDFs, canvases, JSON, ...) but sub-folders."""
        prefix = scope.strip("/") + "/" if scope else None
        return [
            e
            for e in self._by_doc_id.values()
            if (e.is_markdown or (files and e.type != "folder"))
            and access.sees_folder(e.folder_id)
            and (prefix is None or e.user_path.startswith(prefix))
        ]

    def visible_folders(self, access: Access) -> list[tuple[int, str]]:
        return sorted(
            ((fid, name) for fid, (name, _) in self.folders.items() if access.sees_folder(fid)),
            key=lambda item: item[1],
        )

    def all_entries(self) -> list[DocEntry]:
        return list(self._by_doc_id.values())

    def entry_at(self, user_path: str) -> DocEntry | None:
        return self._by_path.get(user_path)

    def link_targets(self, access: Access) -> frozenset[LinkTarget]:
        """The files a link read by this caller may resolve to: those it may see. Embeds reach images,
        PDFs and canvases as well as notes (`![[diagram.png]]`), so every entry but sub-folders."""
        return frozenset(
            e.link_target
            for e in self._by_doc_id.values()
            if e.type != "folder" and access.sees_folder(e.folder_id)
        )

    def folder_entries(self, folder_id: int) -> list[DocEntry]:
        return self._folder_view(folder_id)[1]

    def folder_link_targets(self, folder_id: int) -> frozenset[LinkTarget]:
        """What links inside the folder can reach: every entry but sub-folders (embeds reach files)."""
        return self._folder_view(folder_id)[2]

    def _folder_view(self, folder_id: int) -> tuple[int, list[DocEntry], frozenset[LinkTarget]]:
        view = self._folder_views.get(folder_id)
        if view is None or view[0] != self.generation:
            members = [e for e in self._by_doc_id.values() if e.folder_id == folder_id]
            targets = frozenset(e.link_target for e in members if e.type != "folder")
            if view is not None and view[2] == targets:
                targets = view[2]  # the same set as before: link graphs see it is theirs without comparing
            if len(self._folder_views) > 1024:
                self._folder_views.clear()
            view = self._folder_views[folder_id] = (self.generation, members, targets)
        return view


def path_index(store: DocStore) -> PathIndex:
    return store.attached(PathIndex)


@on_foreign
def _logged_elsewhere(store: DocStore, doc_id: str) -> None:
    path_index(store).logged_elsewhere(doc_id)
