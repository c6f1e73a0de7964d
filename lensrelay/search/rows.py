"""What the search index stores and answers, and the text rules both database backends share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any

from django.db import connection

from lensrelay.text.frontmatter import locate_frontmatter

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


@dataclass(frozen=True)
class IndexedDocument:
    doc_id: str
    folder_id: int
    path: str  # folder-relative, leading slash
    title: str
    text: str
    modified: float = 0.0  # the document's modified time when its text was read (seconds)

    @cached_property
    def parts(self) -> tuple[str, str, str]:
        """(title, frontmatter, body) as the index stores them (worked out once: before the write lock is
        taken, see `search_index_documents`).

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


def stale_rows(
    table: str, *, documents: str, params: list[Any], folder_id: int | None, epoch: str
) -> tuple[list[str], list[str]]:
    """Both backends' comparison of the index with a documents query (doc_id, folder_id, path, modified).

    `epoch` turns the documents' `modified` column (`d.modified`) into the same float as Python's
    `datetime.timestamp()`, which is what an index row records, so an unchanged document compares equal.
    """
    outdated_sql = f"""
        SELECT d.doc_id FROM ({documents}) d LEFT JOIN {table} s ON s.doc_id = d.doc_id
        WHERE s.doc_id IS NULL OR s.path <> d.path OR s.folder_id <> d.folder_id OR s.modified < {epoch}
    """
    gone_sql = f"""
        SELECT s.doc_id FROM {table} s LEFT JOIN ({documents}) d ON d.doc_id = s.doc_id WHERE d.doc_id IS NULL
    """
    gone_params = list(params)
    if folder_id is not None:
        gone_sql += " AND s.folder_id = %s"
        gone_params.append(folder_id)
    with connection.cursor() as cursor:
        cursor.execute(outdated_sql, params)
        outdated = [doc_id for (doc_id,) in cursor.fetchall()]
        cursor.execute(gone_sql, gone_params)
        gone = [doc_id for (doc_id,) in cursor.fetchall()]
    return outdated, gone


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
