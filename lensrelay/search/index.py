"""The search index, whatever the database: write documents into it, remove them, query it.

SQLite uses an FTS5 table, PostgreSQL a tsvector column with a GIN index; both live in tables created by
the `search_index` migration. Callers never see the difference. Everything here is synchronous and runs
on the document store's database thread (or in a management command).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from types import ModuleType
from typing import Any

from django.db import connection, transaction

from lensrelay.frontmatter import locate_frontmatter
from lensrelay.search.query import ParsedQuery, parse_query

# Snippet highlights travel as private-use characters, so a `**` already in the text is never mistaken
# for one; they become `**` at the very end.
HIGHLIGHT_START = "\ue000"
HIGHLIGHT_STOP = "\ue001"
SNIPPET_WORDS = 30
MARKDOWN_SUFFIXES = (".md", ".markdown")

# Matched words on one line read as one bold run; across lines they stay separate.
_ADJACENT_HIGHLIGHTS = re.compile(re.escape(HIGHLIGHT_STOP) + r"([ \t]+)" + re.escape(HIGHLIGHT_START))
_WHITESPACE = re.compile(r"\s+")
_UNSTORABLE = str.maketrans({"\x00": " ", HIGHLIGHT_START: " ", HIGHLIGHT_STOP: " "})


class SearchUnavailable(RuntimeError):
    """The database has no full-text search backend (only SQLite and PostgreSQL have one)."""


@dataclass(frozen=True)
class IndexedDocument:
    doc_id: str
    folder_id: int
    path: str  # folder-relative, leading slash
    title: str
    text: str
    modified: float = 0.0  # the document's modified time when its text was read (seconds)

    def parts(self) -> tuple[str, str, str]:
        """(title, frontmatter, body) as the index stores them.

        Frontmatter is searchable but weighs less than the body and never fills a snippet.
        """
        text = storable(self.text)
        located = locate_frontmatter(text)
        if located is None:
            return storable(self.title), "", text
        yaml_start, yaml_end, body_start = located
        return storable(self.title), text[yaml_start:yaml_end], text[body_start:]


@dataclass(frozen=True)
class IndexedEntry:
    folder_id: int
    path: str
    modified: float


def indexed_rows(table: str, folder_id: int | None) -> dict[str, IndexedEntry]:
    """What a backend's table holds, per document: both backends keep the same columns."""
    sql = f"SELECT doc_id, folder_id, path, modified FROM {table}"
    params: list[Any] = []
    if folder_id is not None:
        sql += " WHERE folder_id = %s"
        params.append(folder_id)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {
            doc_id: IndexedEntry(folder_id=fid, path=path, modified=modified)
            for doc_id, fid, path, modified in cursor.fetchall()
        }


@dataclass(frozen=True)
class Hit:
    doc_id: str
    path: str  # folder-relative, leading slash
    folder: str  # folder name
    title: str
    snippet: str  # one line, matches wrapped in `**`
    score: float  # higher is better

    @property
    def user_path(self) -> str:
        return f"{self.folder}{self.path}"


def document_title(path: str) -> str:
    """A document's title is its file name without the markdown suffix."""
    name = PurePosixPath(path).name
    for suffix in MARKDOWN_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def storable(text: str) -> str:
    """Text as the index keeps it: no NULs (PostgreSQL refuses them) and no highlight markers."""
    if "\x00" not in text and HIGHLIGHT_START not in text and HIGHLIGHT_STOP not in text:
        return text  # the common case, without translate's per-character work
    return text.translate(_UNSTORABLE)


def finish_snippet(raw: str) -> str:
    """One line of text with each run of matched words wrapped in `**` once."""
    text = _ADJACENT_HIGHLIGHTS.sub(r"\1", raw)
    text = _WHITESPACE.sub(" ", text).strip()
    return text.replace(HIGHLIGHT_START, "**").replace(HIGHLIGHT_STOP, "**")


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


def search_index_documents(documents: Iterable[IndexedDocument]) -> None:
    """Add or replace documents, all in one transaction."""
    batch = list(documents)
    if batch:
        with transaction.atomic():
            backend().upsert(batch)


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


# -- querying ----------------------------------------------------------------------------------------------


def search_query(
    *,
    query: str | ParsedQuery,
    folder_ids: set[int] | frozenset[int] | None,
    path_prefix: str | None = None,
    limit: int = 20,
) -> list[Hit]:
    """The best `limit` matches, best first; ties go by folder and path so results are stable.

    `folder_ids` None means every folder; `path_prefix` is folder-relative (`/Notes/`). Raises
    `QueryError` for a query with nothing to search for.
    """
    parsed = parse_query(query) if isinstance(query, str) else query
    if (folder_ids is not None and not folder_ids) or limit <= 0:
        return []
    ids = None if folder_ids is None else sorted(folder_ids)
    return backend().query(parsed, folder_ids=ids, path_prefix=path_prefix or None, limit=limit)
