"""User-facing paths (`Lens/Notes/Ideas.md`) to documents: an in-memory index kept current per folder.

Built once from the database, then refreshed one folder at a time whenever that folder's entries are
mirrored, so resolving a path never scans all documents. Folders created or deleted anywhere (another
worker, the admin, `import_vault` in its own process) announce themselves in the update log: a logged
document this index does not know makes it re-read the folder list, and load new folders' documents.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from lensrelay.auth import Access
from lensrelay.docstore.later import Later
from lensrelay.docstore.store import DocStore, on_foreign
from lensrelay.links.resolve import LinkTarget
from lensrelay.models import Document, Folder
from lensrelay.vaultpath import InvalidPath, has_md_suffix, split_user_path


@dataclass(frozen=True)
class DocEntry:
    doc_id: str
    folder_id: int
    folder_name: str
    folder_doc_id: str
    path: str  # folder-relative, leading slash
    type: str

    @cached_property  # computed once: tools compare it for every document on every call
    def user_path(self) -> str:
        return f"{self.folder_name}{self.path}"

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
    documents = Document.objects.select_related("folder")
    if folder_ids is not None:
        documents = documents.filter(folder_id__in=list(folder_ids))
    return [
        DocEntry(
            doc_id=d.doc_id,
            folder_id=d.folder_id,
            folder_name=d.folder.name,
            folder_doc_id=d.folder.doc_id,
            path=d.path,
            type=d.type,
        )
        for d in documents
    ]


def _folders() -> list[tuple[int, str, str]]:
    return list(Folder.objects.values_list("id", "name", "doc_id"))


class PathIndex:
    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.loaded = False
        self.folders: dict[int, tuple[str, str]] = {}  # id -> (name, folder doc id)
        self._by_path: dict[str, DocEntry] = {}
        self._by_doc_id: dict[str, DocEntry] = {}
        self._folders_changed = Later(store, lambda _: self.refresh_folders(), delay=lambda: 0.0)
        # Bumped on every change, so what is derived from the entries can be kept until it moves.
        self.generation = 0

    async def ensure(self) -> None:
        if self.loaded:
            return
        await self.store.start_feed()  # from now on, whatever another process logs is seen here
        folders, rows = await self.store.db(_folders), await self.store.db(_rows)
        self.folders = {fid: (name, doc_id) for fid, name, doc_id in folders}
        self._replace(rows, folder_ids=None)
        self.loaded = True
        # Folder documents stay loaded, so changes made through any worker reach this index.
        for _, doc_id in self.folders.values():
            await self.store.get(doc_id)

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
        if folders != self.folders:
            self.folders, self.generation = folders, self.generation + 1
        if gone:
            self._replace([], folder_ids=gone)
        for doc_id in new:
            await self.store.get(doc_id)

    async def refresh_folder(self, folder_id: int) -> None:
        if not self.loaded:
            return
        self.folders = {fid: (name, doc_id) for fid, name, doc_id in await self.store.db(_folders)}
        self._replace(await self.store.db(_rows, [folder_id]), folder_ids={folder_id})

    def _replace(self, rows: list[DocEntry], *, folder_ids: set[int] | None) -> None:
        self.generation += 1
        if folder_ids is None:
            self._by_path, self._by_doc_id = {}, {}
        else:
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

    def visible(self, access: Access, *, scope: str | None = None) -> list[DocEntry]:
        """Markdown documents the caller may see, optionally under a folder or sub-folder path."""
        prefix = scope.strip("/") + "/" if scope else None
        return [
            e
            for e in self._by_doc_id.values()
            if e.is_markdown
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
        """The markdown documents a link read by this caller may resolve to: those it may see."""
        return frozenset(
            e.link_target
            for e in self._by_doc_id.values()
            if e.is_markdown and access.sees_folder(e.folder_id)
        )

    def folder_entries(self, folder_id: int) -> list[DocEntry]:
        return [e for e in self._by_doc_id.values() if e.folder_id == folder_id]


def path_index(store: DocStore) -> PathIndex:
    return store.attached(PathIndex)


@on_foreign
def _logged_elsewhere(store: DocStore, doc_id: str) -> None:
    path_index(store).logged_elsewhere(doc_id)
