"""The search index, whatever the database: write documents into it, remove them, query it.

SQLite uses an FTS5 table, PostgreSQL a tsvector column with a GIN index; both live in tables created by
the `search_index` migration. Callers never see the difference. Everything here is synchronous and runs
on the document store's database thread (or in a management command).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet

from lensrelay.search.query import ParsedQuery, parse_query
from lensrelay.search.rows import Hit, IndexedDocument, IndexedEntry


class SearchUnavailable(RuntimeError):
    """The database has no full-text search backend (only SQLite and PostgreSQL have one)."""


def backend() -> ModuleType:
    vendor = connection.vendor
    if vendor == "sqlite":
        from lensrelay.search import sqlite

        return sqlite
    if vendor == "postgresql":
        from lensrelay.search import postgres

        return postgres
    raise SearchUnavailable(f"full-text search is not available on {vendor}; use SQLite or PostgreSQL")


# -- writing -----------------------------------------------------------------------------------------------


def search_index_document(
    *, doc_id: str, title: str, folder_id: int, path: str, text: str, modified: float = 0.0
) -> None:
    search_index_documents(
        [
            IndexedDocument(
                doc_id=doc_id, folder_id=folder_id, path=path, title=title, text=text, modified=modified
            )
        ]
    )


# Documents written per transaction at most. On SQLite a transaction holds the file's one write lock, which
# the server's update log appends wait for: the derive process's 150 search rows of a pass in one
# transaction held it 15-23 ms, and the live path's tail grew by as much (issue 36).
WRITE_CHUNK = 10


def search_index_documents(documents: Iterable[IndexedDocument]) -> None:
    """Add or replace documents, WRITE_CHUNK to a transaction; each document's row is replaced whole."""
    batch = list(documents)
    for document in batch:
        document.parts  # noqa: B018 (worked out now: not while holding the lock)
    for start in range(0, len(batch), WRITE_CHUNK):
        with transaction.atomic():
            backend().upsert(batch[start : start + WRITE_CHUNK])


def search_remove_document(*, doc_id: str) -> None:
    search_remove_documents(doc_ids=[doc_id])


def search_remove_documents(*, doc_ids: Iterable[str]) -> None:
    ids = list(doc_ids)
    if ids:
        with transaction.atomic():
            backend().remove(ids)


def search_clear() -> None:
    """Empty the index (a full reindex starts here; tests too)."""
    with transaction.atomic():
        backend().clear()


def search_indexed(*, folder_id: int | None = None) -> dict[str, IndexedEntry]:
    """What the index holds, by document id: for comparing it with the documents."""
    return backend().indexed(folder_id)


def search_stale(*, documents: QuerySet[Any, Any], folder_id: int | None) -> tuple[list[str], list[str]]:
    """Compare the index with `documents` (a `values_list` of doc_id, folder_id, path, modified) inside
    the database: (documents whose entry is missing or older, or names another path or folder; entries
    of `folder_id`, or of all folders when None, whose document is not among `documents`)."""
    # No ORDER BY (the model orders by folder name, a join): the comparison needs no order.
    sql, params = documents.order_by().query.sql_with_params()
    return backend().stale(sql, list(params), folder_id)


# -- querying ----------------------------------------------------------------------------------------------


def search_query(
    *,
    query: str | ParsedQuery,
    folder_ids: set[int] | frozenset[int] | None,
    path_prefix: str | None = None,
    limit: int = 20,
) -> list[Hit]:
    """The best `limit` matches, best first: every note with a searched word in its title before the
    others; ties go by folder and path so results are stable.

    `folder_ids` None means every folder; `path_prefix` is folder-relative (`/Notes/`). Raises
    `QueryError` for a query with nothing to search for.
    """
    parsed = parse_query(query) if isinstance(query, str) else query
    if (folder_ids is not None and not folder_ids) or limit <= 0:
        return []
    ids = None if folder_ids is None else sorted(folder_ids)
    return backend().query(parsed, folder_ids=ids, path_prefix=path_prefix or None, limit=limit)
