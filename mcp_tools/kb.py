"""The knowledge base as tools see it: paths the caller may use, and texts in the accepted view.

Every read tool goes through here, so `read`, `grep`, `search` and `get_links` see the same text and a
line number one reports is the line another shows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from lensrelay.docstore.store import DocStore, get_store
from lensrelay.docstore.texts import LOAD_BATCH, TextCache, text_bytes, text_cache
from lensrelay.links.graph import LinkGraph, link_graph
from lensrelay.links.resolve import LinkTarget
from lensrelay.search.maintain import search_catch_up
from lensrelay.vault.paths import DocEntry, PathIndex, path_index
from mcp_tools.engines.grep import Joined, join_docs
from mcp_tools.registry import ToolContext, ToolError
from suggestions.markup.accepted_view import accepted_text


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

    def visible(self, ctx: ToolContext, *, scope: str | None = None, files: bool = False) -> list[DocEntry]:
        """Markdown documents the caller may see; with ``files``, every file (images, JSON, ...) too."""
        if scope:
            folder = scope.strip("/").split("/", 1)[0]
            if not any(name == folder for _, name in self.index.visible_folders(ctx.access)):
                raise ToolError(f"Error: Folder not found: {scope}")
        key = (self.index.generation, ctx.access.folder_ids, scope)
        kept = _visible_sorted.setdefault(self.index, {})
        cached = kept.get(files)
        if cached is None or cached[0] != key:
            entries = sorted(
                self.index.visible(ctx.access, scope=scope, files=files), key=lambda e: e.user_path
            )
            # One view per index and kind: the last caller's, enough for the common one-token server.
            cached = kept[files] = (key, entries)
        return list(cached[1])

    async def raw_text(self, entry: DocEntry) -> str:
        return await self.texts.get(entry.doc_id)

    async def view_text(self, entry: DocEntry) -> str:
        return accepted_text(await self.raw_text(entry))

    async def view_texts(self, entries: Iterable[DocEntry]) -> dict[str, str]:
        return await self.texts.views_many(e.doc_id for e in entries)

    async def view_docs(
        self, entries: list[DocEntry], *, same_as: tuple[object, ...] | None = None
    ) -> list[tuple[str, str]]:
        """(user path, accepted view) of each entry, in order: `view_texts` in one pass, for tools that
        scan every document on every call. `same_as` names the entries (equal only for the same list);
        with it the result is kept until the index or a text changes, or the text cache evicts (so the
        kept list never holds texts beyond the cache's budget)."""
        key = None if same_as is None else (self.index.generation, self.texts.generation, *same_as)
        derived = self.texts.derived
        kept = derived.get(_DOCS_KEPT)
        if key is not None and isinstance(kept, tuple) and kept[0] == key:
            docs: list[tuple[str, str]] = kept[1]
            return docs
        evictions = self.texts.evictions
        views = await self.texts.views_many(e.doc_id for e in entries)
        docs = [(entry.user_path, views[entry.doc_id]) for entry in entries]
        if (
            key is not None
            and key[:2] == (self.index.generation, self.texts.generation)
            and evictions == self.texts.evictions
        ):
            derived[_DOCS_KEPT] = (key, docs)
        return docs

    def kept_docs(self, same_as: tuple[object, ...]) -> list[tuple[str, str]] | None:
        """What `view_docs` would return for entries named ``same_as`` when it still keeps them (nothing
        changed since), without the entries: a caller that names its entries fully in ``same_as`` skips
        working them out again."""
        kept = self.texts.derived.get(_DOCS_KEPT)
        if isinstance(kept, tuple) and kept[0] == (self.index.generation, self.texts.generation, *same_as):
            docs: list[tuple[str, str]] = kept[1]
            return docs
        return None

    async def joined_docs(self, docs: list[tuple[str, str]]) -> Joined | None:
        """`join_docs` of the list `view_docs` keeps (None for any other list), joined once on a worker
        thread and kept beside it while the text cache's budget has room for the copy; when it has not,
        None (grep then joins what it scans as it goes, as it always did)."""
        texts = self.texts
        kept = texts.derived.get(_DOCS_KEPT)
        if not isinstance(kept, tuple) or kept[1] is not docs:
            return None
        held = texts.derived.get(_JOINED_KEPT)
        if isinstance(held, Joined) and held.docs is docs:
            return held
        building = texts.derived.get(_JOINING)
        if not isinstance(building, tuple) or building[0] is not docs:
            # About what the joined copy will cost; nothing is joined when it would not be kept.
            needed = sum(text_bytes(text) for _, text in docs)
            if texts.bytes + texts.derived_bytes + needed > texts.budget:
                return None
            # One join for all the calls that ask meanwhile.
            building = texts.derived[_JOINING] = (
                docs,
                asyncio.ensure_future(asyncio.to_thread(join_docs, docs)),
            )
        future: asyncio.Future[Joined] = building[1]
        joined = await asyncio.shield(future)
        if texts.derived.get(_JOINING) is building:
            del texts.derived[_JOINING]
        kept = texts.derived.get(_DOCS_KEPT)
        if isinstance(kept, tuple) and kept[1] is docs and texts.derived.get(_JOINED_KEPT) is not joined:
            texts.keep_derived(_JOINED_KEPT, joined, joined.bytes)
        return joined

    def streamed_docs(self, entries: list[DocEntry]) -> StreamedDocs:
        """(user path, accepted view) of each entry, in order, loaded a batch at a time while a worker
        thread iterates: a scan over more texts than the cache keeps never holds them all at once."""
        return StreamedDocs(self.texts, entries, asyncio.get_running_loop())

    def link_graph(self, ctx: ToolContext) -> LinkGraph:
        """Links resolved among the documents the caller may see, and nothing else."""
        access = ctx.access
        return link_graph(self.store, self.index.link_targets(access), scope=("access", access.folder_ids))


class StreamedDocs:
    """Iterated on a worker thread; each batch is loaded on the event loop (where the cache lives) as the
    iteration reaches it, so only that batch, and what the cache keeps within its budget, is in memory."""

    def __init__(self, texts: TextCache, entries: list[DocEntry], loop: asyncio.AbstractEventLoop) -> None:
        self.texts = texts
        self.entries = entries
        self.loop = loop
        self.waited = 0.0

    def waited_seconds(self) -> float:
        """Seconds the iteration spent waiting for texts to load (a scan's deadline leaves them out)."""
        return self.waited

    def __iter__(self) -> Iterator[tuple[str, str]]:
        entries = self.entries
        for start in range(0, len(entries), STREAM_BATCH):
            batch = entries[start : start + STREAM_BATCH]
            began = time.monotonic()
            loading = asyncio.run_coroutine_threadsafe(
                self.texts.views_many(e.doc_id for e in batch), self.loop
            )
            views = loading.result(timeout=STREAM_LOAD_TIMEOUT)
            self.waited += time.monotonic() - began
            for entry in batch:
                yield entry.user_path, views[entry.doc_id]


def target_of(entry: DocEntry) -> LinkTarget:
    return entry.link_target


# Texts loaded per step of a streamed scan: as many as the cache loads per query.
STREAM_BATCH = LOAD_BATCH
# A batch that does not load in this long (the event loop stopped, the database hangs) ends the scan.
STREAM_LOAD_TIMEOUT = 120.0
# The last documents handed to a scanning tool (key: generations and what names the entries).
_DOCS_KEPT = "kb.view_docs"
# `join_docs` of the documents kept under _DOCS_KEPT, with its size counted against the text budget.
_JOINED_KEPT = "kb.joined_docs"
# The join under way for `joined_docs`: (the list being joined, its future).
_JOINING = "kb.joining"
# The index's sorted visible entries for the last (generation, folders, scope) asked, per index and per
# kind (notes only, or every file).
_visible_sorted: WeakKeyDictionary[PathIndex, dict[bool, tuple[tuple[object, ...], list[DocEntry]]]] = (
    WeakKeyDictionary()
)


async def open_kb() -> KnowledgeBase:
    store = get_store()
    index = path_index(store)
    await index.ensure()
    # Once per process: find what a crashed process left unindexed, after the first answer's work.
    search_catch_up(store, after=lambda: index.folders_loaded(now=False))
    return KnowledgeBase(store=store, index=index, texts=text_cache(store))
