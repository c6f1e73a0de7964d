"""PostgreSQL backend: `lensrelay_search` rows with a weighted tsvector under a GIN index.

The `simple` configuration lowercases and splits words without stemming or stop words, so every language
is searched alike. Titles carry weight A, bodies B and frontmatter C. Documents with a searched word in
their title (weight A) come first, as on SQLite, best title match first (`ts_rank_cd` over the title's
lexemes); `ts_rank_cd` over the whole document ranks the rest and breaks ties; `ts_headline` makes
snippets (from the body) for the winners only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from lensrelay.docstore.serverbound import server_bound_rows
from lensrelay.search.query import ParsedQuery, postgres_any_required, postgres_expression
from lensrelay.search.rows import (
    HIGHLIGHT_START,
    HIGHLIGHT_STOP,
    SNIPPET_WORDS,
    Hit,
    IndexedDocument,
    IndexedEntry,
    finish_snippet,
    indexed_rows,
    stale_rows,
)

TABLE = "lensrelay_search"
CONFIG = "simple"
# A tsvector holds at most 1 MB; text past this many characters is stored but not indexed.
VECTOR_CHARS = 500_000
# ts_headline parses the text it is given; this bounds the cost of a snippet from a huge document.
HEADLINE_CHARS = 200_000
# Weights for {D, C, B, A}: a title match counts ten times a body match, frontmatter twice.
WEIGHTS = "{0.01, 0.2, 0.1, 1.0}"
# Divide the rank by 1 + log(document length), so long documents do not win by size alone.
NORMALIZATION = 1
HEADLINE_OPTIONS = (
    f'StartSel="{HIGHLIGHT_START}", StopSel="{HIGHLIGHT_STOP}", MaxWords={SNIPPET_WORDS}, '
    f'MinWords={SNIPPET_WORDS // 2}, ShortWord=0, MaxFragments=1, FragmentDelimiter=" … "'
)
_VECTOR = (
    f"setweight(to_tsvector('{CONFIG}', v.title), 'A')"
    f" || setweight(to_tsvector('{CONFIG}', left(v.meta, {VECTOR_CHARS})), 'C')"
    f" || setweight(to_tsvector('{CONFIG}', left(v.body, {VECTOR_CHARS})), 'B')"
)
# One statement for a batch, bound on the server: the texts travel once, apart from the SQL, not quoted
# into it in Python twice each (once for the row, once for its vector), a statement per note (issue 36).
# It returns the ids only because `server_bound_rows` reads a statement's rows.
_UPSERT = f"""
    INSERT INTO {TABLE} (doc_id, folder_id, path, title, body, modified, document)
    SELECT v.doc_id, v.folder_id, v.path, v.title, v.body, v.modified, {_VECTOR}
    FROM unnest(%s::text[], %s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::float8[])
        AS v(doc_id, folder_id, path, title, meta, body, modified)
    ON CONFLICT (doc_id) DO UPDATE SET
        folder_id = EXCLUDED.folder_id, path = EXCLUDED.path, title = EXCLUDED.title,
        body = EXCLUDED.body, modified = EXCLUDED.modified, document = EXCLUDED.document
    RETURNING doc_id
"""


def upsert(documents: Sequence[IndexedDocument]) -> None:
    # A document twice in one batch: the last one wins, as with a statement per document (one INSERT …
    # ON CONFLICT may not touch a row twice).
    latest = list({doc.doc_id: doc for doc in documents}.values())
    if not latest:
        return
    # One type per array (psycopg dumps a list by its first element): a modified time may be an int.
    rows = [(doc.doc_id, int(doc.folder_id), doc.path, *doc.parts, float(doc.modified)) for doc in latest]
    columns = [list(column) for column in zip(*rows, strict=True)]
    server_bound_rows(_UPSERT, columns)


def remove(doc_ids: Sequence[str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE doc_id = ANY(%s)", [list(doc_ids)])


def clear() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE}")


def indexed(folder_id: int | None) -> dict[str, IndexedEntry]:
    return indexed_rows(TABLE, folder_id)


def stale(documents: str, params: list[Any], folder_id: int | None) -> tuple[list[str], list[str]]:
    # extract() is exact (numeric) and its conversion to double rounds once, like Python's timestamp().
    epoch = "extract(epoch FROM d.modified)::double precision"
    return stale_rows(TABLE, documents=documents, params=params, folder_id=folder_id, epoch=epoch)


def query(
    parsed: ParsedQuery, *, folder_ids: list[int] | None, path_prefix: str | None, limit: int
) -> list[Hit]:
    tsquery, query_params = postgres_expression(parsed, config=CONFIG)
    titles, title_params = postgres_any_required(parsed, config=CONFIG)
    where = ["s.document @@ q.query"]
    params: list[Any] = [*query_params, *title_params, NORMALIZATION, WEIGHTS, NORMALIZATION]
    if folder_ids is not None:
        where.append("d.folder_id = ANY(%s)")
        params.append(folder_ids)
    if path_prefix:
        where.append("left(d.path, %s) = %s")
        params.extend([len(path_prefix), path_prefix])
    params.extend([limit, HEADLINE_CHARS, HEADLINE_OPTIONS])
    sql = f"""
        WITH q AS (SELECT {tsquery} AS query, {titles} AS titles),
        top AS (
            SELECT s.doc_id, d.path, f.name AS folder, s.title, s.body,
                   ts_filter(s.document, '{{a}}') @@ q.titles AS titled,
                   CASE WHEN ts_filter(s.document, '{{a}}') @@ q.titles
                        THEN ts_rank_cd(ts_filter(s.document, '{{a}}'), q.titles, %s) ELSE 0
                   END AS title_score,
                   ts_rank_cd(%s::float4[], s.document, q.query, %s) AS score
            FROM {TABLE} s
            CROSS JOIN q
            JOIN lensrelay_document d ON d.doc_id = s.doc_id
            JOIN lensrelay_folder f ON f.id = d.folder_id
            WHERE {" AND ".join(where)}
            ORDER BY titled DESC, title_score DESC, score DESC, f.name COLLATE "C", d.path COLLATE "C"
            LIMIT %s
        )
        SELECT top.doc_id, top.path, top.folder, top.title,
               ts_headline('{CONFIG}', left(top.body, %s), q.query, %s),
               left(top.body, 200), right(top.body, 200), top.score
        FROM top CROSS JOIN q
        ORDER BY top.titled DESC, top.title_score DESC, top.score DESC, top.folder COLLATE "C",
            top.path COLLATE "C"
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        Hit(
            doc_id=doc_id,
            path=path,
            folder=folder,
            title=title,
            snippet=_with_ellipses(headline, head, tail),
            score=float(score),
        )
        for doc_id, path, folder, title, headline, head, tail, score in rows
    ]


def _with_ellipses(headline: str, head: str, tail: str) -> str:
    """Mark cut text the way FTS5 does: `…` where the snippet does not reach the body's start or end.

    Compared on letters and digits only: ts_headline drops some punctuation at a fragment's edges.
    """
    snippet = finish_snippet(headline)
    plain = _alnum(headline)
    if not plain:
        return snippet
    starts = _alnum(head).startswith(plain[:30])
    ends = _alnum(tail).endswith(plain[-30:])
    return ("" if starts else "… ") + snippet + ("" if ends else " …")


def _alnum(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())
