"""The knowledge base as tools see it: paths the caller may use, and texts in the accepted view.

Every read tool goes through here, so `read`, `grep`, `search` and `get_links` see the same text and a
line number one reports is the line another shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from lensrelay.docstore.store import DocStore, get_store
from lensrelay.links.graph import LinkGraph, link_graph
from lensrelay.links.resolve import LinkTarget
from lensrelay.paths import DocEntry, PathIndex, path_index
from lensrelay.texts import TextCache, text_cache
from mcp_tools.registry import ToolContext, ToolError
from suggestions.accepted_view import accepted_text


@dataclass
class KnowledgeBase:
    store: DocStore
    index: PathIndex
    texts: TextCache

    def resolve(self, ctx: ToolContext, file_path: str) -> DocEntry:
        entry = self.index.resolve(ctx.access, file_path)
        if entry is None:
            raise ToolError(f"Error: Document not found: {file_path}")
        return entry

    def visible(self, ctx: ToolContext, *, scope: str | None = None) -> list[DocEntry]:
        if scope:
            folder = scope.strip("/").split("/", 1)[0]
            if not any(name == folder for _, name in self.index.visible_folders(ctx.access)):
                raise ToolError(f"Error: Folder not found: {scope}")
        key = (self.index.generation, ctx.access.folder_ids, scope)
        cached = _visible_sorted.get(self.index)
        if cached is None or cached[0] != key:
            entries = sorted(self.index.visible(ctx.access, scope=scope), key=lambda e: e.user_path)
            # One entry per index: the last caller's view, enough for the common one-token server.
            cached = _visible_sorted[self.index] = (key, entries)
        return list(cached[1])

    async def raw_text(self, entry: DocEntry) -> str:
        return await self.texts.get(entry.doc_id)

    async def view_text(self, entry: DocEntry) -> str:
        return accepted_text(await self.raw_text(entry))

    async def view_texts(self, entries: Iterable[DocEntry]) -> dict[str, str]:
        entries = list(entries)
        raw = await self.texts.get_many(e.doc_id for e in entries)
        return {e.doc_id: _cached_view(raw[e.doc_id]) for e in entries}

    async def view_docs(
        self, entries: list[DocEntry], *, same_as: tuple[object, ...] | None = None
    ) -> list[tuple[str, str]]:
        """(user path, accepted view) of each entry, in order: `view_texts` in one pass, for tools that
        scan every document on every call. `same_as` names the entries (equal only for the same list);
        with it the result is kept until the index or a text changes."""
        key = None if same_as is None else (self.index.generation, self.texts.generation, *same_as)
        kept = _docs_kept.get(self.index)
        if key is not None and kept is not None and kept[0] == key:
            return kept[1]
        docs = await self._view_docs(entries)
        if key is not None and key[:2] == (self.index.generation, self.texts.generation):
            _docs_kept[self.index] = (key, docs)
        return docs

    async def _view_docs(self, entries: list[DocEntry]) -> list[tuple[str, str]]:
        raw = await self.texts.get_many(e.doc_id for e in entries)
        views = _views
        docs = []
        for entry in entries:
            text = raw[entry.doc_id]
            hit = views.get(id(text))
            docs.append(
                (entry.user_path, hit[1] if hit is not None and hit[0] is text else _cached_view(text))
            )
        return docs

    def link_graph(self, ctx: ToolContext) -> LinkGraph:
        """Links resolved among the documents the caller may see, and nothing else."""
        access = ctx.access
        return link_graph(self.store, self.index.link_targets(access), scope=("access", access.folder_ids))


def target_of(entry: DocEntry) -> LinkTarget:
    return entry.link_target


_views: dict[int, tuple[str, str]] = {}
# The last documents handed to a scanning tool, per index (key: generations and what names the entries).
_docs_kept: WeakKeyDictionary[PathIndex, tuple[tuple[object, ...], list[tuple[str, str]]]] = (
    WeakKeyDictionary()
)
# The index's sorted visible entries for the last (generation, folders, scope) asked, per index.
_visible_sorted: WeakKeyDictionary[PathIndex, tuple[tuple[object, ...], list[DocEntry]]] = WeakKeyDictionary()


def _cached_view(raw: str) -> str:
    # Texts are immutable strings: the same object means the same view.
    cached = _views.get(id(raw))
    if cached is not None and cached[0] is raw:
        return cached[1]
    view = accepted_text(raw)
    if len(_views) > 50_000:
        _views.clear()  # old texts are kept alive by this cache; bound it
    _views[id(raw)] = (raw, view)
    return view


async def open_kb() -> KnowledgeBase:
    store = get_store()
    index = path_index(store)
    await index.ensure()
    return KnowledgeBase(store=store, index=index, texts=text_cache(store))
