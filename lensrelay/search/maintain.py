"""Keeping the search index current: edits, creations, renames and deletions reach it within a second or
two.

- With a derive process (LENSRELAY_DERIVED_WORK=process, the default) it follows the update log and
  reindexes each changed document in the next pass (`lensrelay.docstore.derived`), a note typed into
  without pause every `LENSRELAY_SEARCH_REWRITE_SECONDS`; the server processes index no edits. Inline,
  the process that sees a change schedules it, as below.

- Content edits (here or in another process) are collected for `DEBOUNCE_SECONDS`, then their texts are
  read from the text cache and written in batches on the store's database thread.
- Folder changes (created, renamed, deleted documents, an imported vault) arrive through
  `search_folder_changed`, which `mirror_folder` calls once the document rows are current: the index is
  compared with the rows and brought in step before it returns.
- Each index row remembers the document's `modified` time when its text was read, so a change missed
  while no process was listening (a crash, a command that exited) is found by the same comparison over
  every folder, which each process starts in the background once (`search_catch_up`: when a tool first
  opens the knowledge base, after the folder documents are loaded; the derive process after its first
  pass, which also finds the rows it still owed when it stopped). Searches answer from the index
  meanwhile (at 100,000 notes the comparison takes seconds); `search_ready` waits for it.

Importing this module registers the derived view "search" (lensrelay.docstore.derived).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet

from lensrelay.docstore import persistence
from lensrelay.docstore.derived import Follows, derived_inline, derived_view
from lensrelay.docstore.inlists import rows_in
from lensrelay.docstore.later import Spaced
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache, view_of
from lensrelay.docstore.trashdoc import TRASH
from lensrelay.models import Document
from lensrelay.search.index import (
    search_index_documents,
    search_indexed,
    search_remove_documents,
    search_stale,
)
from lensrelay.search.rows import IndexedDocument, document_title

logger = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.5
BATCH = 200


@dataclass(frozen=True)
class DocumentRow:
    doc_id: str
    folder_id: int
    path: str
    modified: float


def _markdown_documents(
    *, folder_id: int | None = None
) -> QuerySet[Document, tuple[str, int, str, datetime]]:
    """The documents the index should hold: (doc_id, folder_id, path, modified)."""
    # The trash is not searched (see lensrelay.vault.trash): its notes leave the index and come back on
    # restore.
    documents = Document.objects.filter(type="markdown").exclude(path__startswith=TRASH + "/")
    if folder_id is not None:
        documents = documents.filter(folder_id=folder_id)
    return documents.values_list("doc_id", "folder_id", "path", "modified")


def _markdown_rows(*, doc_ids: Sequence[str] | None = None) -> list[DocumentRow]:
    """The rows the index should hold of these documents (None: of all), as `_markdown_documents`.

    Plain statements: the derive process reads a pass's notes on every pass, and the ORM's statement (with
    the join its default ordering adds) cost it several times the database's answer (issue 36)."""
    table = connection.ops.quote_name(Document._meta.db_table)
    sql = f"SELECT doc_id, folder_id, path, modified FROM {table} WHERE type = %s"
    if doc_ids is None:
        with connection.cursor() as db:
            db.execute(sql, ["markdown"])
            found = db.fetchall()
    else:
        found = rows_in(sql + " AND doc_id IN ({ids})", doc_ids, before=["markdown"])
    modified = persistence.stored_time(Document, "modified")
    return [
        DocumentRow(doc_id=doc_id, folder_id=fid, path=path, modified=modified(at).timestamp())
        for doc_id, fid, path, at in found
        if not path.startswith(TRASH + "/")
    ]


def _compare(folder_id: int | None) -> tuple[list[str], list[str]]:
    """(documents to reindex, index entries removed) for one folder, or all when folder_id is None.

    One query in the database (`search_stale`): turning 100,000 rows of each side into Python to find
    that nothing changed took seconds, before the first search after every start.
    """
    outdated, gone = search_stale(documents=_markdown_documents(folder_id=folder_id), folder_id=folder_id)
    search_remove_documents(doc_ids=gone)
    return outdated, gone


def _stale_apart() -> tuple[list[str], list[str]]:
    """`search_stale` over every folder on a worker thread's own connection, closed afterwards."""
    try:
        return search_stale(documents=_markdown_documents(), folder_id=None)
    finally:
        connection.close()


def _write(rows: Sequence[DocumentRow], texts: dict[str, str], requested: Collection[str]) -> None:
    """Index the rows' texts; requested documents that are gone or not markdown leave the index."""
    search_index_documents(
        IndexedDocument(
            doc_id=row.doc_id,
            folder_id=row.folder_id,
            path=row.path,
            title=document_title(row.path),
            text=texts[row.doc_id],
            modified=row.modified,
        )
        for row in rows
        if row.doc_id in texts
    )
    present = {row.doc_id for row in rows}
    search_remove_documents(doc_ids=[doc_id for doc_id in requested if doc_id not in present])


def _rewrite_seconds() -> float:
    return float(settings.LENSRELAY_SEARCH_REWRITE_SECONDS)


def _views(raw: dict[str, str]) -> dict[str, str]:
    return {doc_id: view_of(text) for doc_id, text in raw.items()}


class SearchMaintainer:
    """Per store: the index written for changed documents, and the comparisons with the document rows."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self._ready: asyncio.Task[None] | None = None
        # With a derive process, a note typed into without pause has its row rewritten every
        # LENSRELAY_SEARCH_REWRITE_SECONDS rather than on every pass: a row is replaced whole, its old text
        # and its new one tokenized, a third of a pass's CPU at notes of a few KB typed into (issue 36). A
        # note changed once is indexed in the next pass as before.
        self.spaced = Spaced(store, self.reindex, spacing=_rewrite_seconds, name="search rows")

    async def settled(self) -> None:
        """Wait until every scheduled change is in the index (tests, shutdown)."""
        await SEARCH.debouncer(self.store).settled()
        await self.spaced.settled()

    async def reindex(self, doc_ids: Iterable[str]) -> None:
        """Read the documents' texts now and write them to the index, in batches."""
        ids = sorted(set(doc_ids))
        for start in range(0, len(ids), BATCH):
            batch = ids[start : start + BATCH]
            # Rows first: their modified time predates the text read, so a later edit is never masked.
            rows = await self.store.db(_markdown_rows, doc_ids=batch)
            raw = await text_cache(self.store).get_many(row.doc_id for row in rows)
            texts = await asyncio.to_thread(_views, raw)
            await self.store.db(_write, rows, texts, batch)

    async def folder_changed(self, folder_id: int | None) -> None:
        if folder_id is None:
            # Every folder: seconds of reading at 100,000 notes, on a connection of its own so the
            # store's database thread (every tool's queries, searches included) is not held meanwhile.
            outdated, gone = await asyncio.to_thread(_stale_apart)
            await self.store.db(search_remove_documents, doc_ids=gone)
        else:
            outdated, _ = await self.store.db(_compare, folder_id)
        SEARCH.debouncer(self.store).discard(*outdated)
        await self.reindex(outdated)

    def catch_up(self, *, after: Callable[[], Awaitable[None]] | None = None) -> asyncio.Task[None]:
        """Once per process, in the background: bring the whole index in step with the documents (after
        `after`, when given). A comparison that failed starts again on the next call."""
        failed = (
            self._ready is not None
            and self._ready.done()
            and (self._ready.cancelled() or self._ready.exception() is not None)
        )
        if self._ready is None or failed:
            self._ready = self.store.spawn(self._catch_up(after))
        return self._ready

    async def _catch_up(self, after: Callable[[], Awaitable[None]] | None) -> None:
        if after is not None:
            await after()
        await self.folder_changed(None)

    async def ready(self) -> None:
        """Wait for the catch-up (starting it if nothing has)."""
        await asyncio.shield(self.catch_up())


def maintainer_for(store: DocStore) -> SearchMaintainer:
    return store.attached(SearchMaintainer)


async def search_folder_changed(store: DocStore, folder_id: int) -> None:
    """Called by folder mirroring once a folder's document rows are current. Never raises: a search
    index problem must not stop mirroring."""
    try:
        await maintainer_for(store).folder_changed(folder_id)
    except Exception:
        logger.exception("could not update the search index for folder %s", folder_id)


def search_catch_up(store: DocStore, *, after: Callable[[], Awaitable[None]] | None = None) -> None:
    """Start the once-per-process catch-up in the background if it has not started (or failed); never
    waits and never raises: a failure is logged (by the store) and the next call starts it again."""
    try:
        maintainer_for(store).catch_up(after=after)
    except Exception:
        logger.exception("could not start bringing the search index up to date")


async def search_ready(store: DocStore) -> None:
    """Wait until the index has caught up with every document (a no-op after the first call).

    Never raises: when catching up fails, searches answer from what the index holds (and the next
    call tries again).
    """
    try:
        await maintainer_for(store).ready()
    except Exception:
        logger.exception("could not bring the search index up to date")


async def search_settled(store: DocStore) -> None:
    await maintainer_for(store).settled()


async def _write_waiting(store: DocStore) -> None:
    await maintainer_for(store).spaced.flush()


async def _derive(store: DocStore, doc_ids: frozenset[str]) -> None:
    maintainer = maintainer_for(store)
    if derived_inline():
        await maintainer.reindex(doc_ids)  # each note once per debounce window already
    else:
        await maintainer.spaced.add(doc_ids)


# Inline, every process indexes the notes it sees change, its own edits and those of other processes.
SEARCH = derived_view(
    "search",
    handle=_derive,
    follows=Follows(elsewhere=True),
    delay=lambda: DEBOUNCE_SECONDS,
    owed=_write_waiting,
)


# -- full reindex (management command) ---------------------------------------------------------------------


def search_reindex_all(*, batch: int = BATCH) -> int:
    """Rebuild the whole index from stored document states; returns how many documents it holds.

    Synchronous, for `manage.py search_reindex`. Entries are replaced in place, so searches keep
    answering meanwhile, and a running server keeps indexing its own edits.
    """
    rows = _markdown_rows()
    current = {row.doc_id for row in rows}
    search_remove_documents(doc_ids=[doc_id for doc_id in search_indexed() if doc_id not in current])
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        texts = {row.doc_id: view_of(persistence.stored_text(row.doc_id) or "") for row in chunk}
        _write(chunk, texts, [])
    return len(rows)
