"""SQLite FTS5 backend: `lensrelay_search_fts(title, meta, body)` plus a row per document naming it.

The FTS table's rowid is the id of the document's row in `lensrelay_search_doc`, so a document is found,
replaced or removed through an ordinary unique index instead of a scan of the FTS content.
Notes with a searched word in their title come first, ranked in `lensrelay_search_title` (the titles
alone, kept by triggers); the rest follow by bm25 with titles weighing most and frontmatter (`meta`) more
than bodies, since it is short and chosen. Snippets come from the body. Scores order hits within a tier
only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from django.db import DEFAULT_DB_ALIAS, connection, connections

from lensrelay.search.query import ParsedQuery, fts5_any_required, fts5_expression, fts5_in_column
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

DOCS = "lensrelay_search_doc"
FTS = "lensrelay_search_fts"
TITLES = "lensrelay_search_title"  # the titles alone, kept by triggers on DOCS (migration 0011)
TITLE_WEIGHT = 10.0
META_WEIGHT = 2.0
BODY_WEIGHT = 1.0
BODY_COLUMN = 2
# SQLite allows 32766 bound parameters; stay well below in IN (...) lists.
CHUNK = 500


def upsert(documents: Sequence[IndexedDocument]) -> None:
    """Replace indexed documents in place and add new ones with a few batched statements (an import
    indexes thousands at once). The same document twice in one batch: the last one wins."""
    latest = {doc.doc_id: doc for doc in documents}
    parts = {doc_id: doc.parts for doc_id, doc in latest.items()}
    with connection.cursor() as cursor:
        ids = _row_ids(cursor, list(latest))
        replaced = [doc for doc_id, doc in latest.items() if doc_id in ids]
        new = [doc for doc_id, doc in latest.items() if doc_id not in ids]
        # Every row of DOCS before any of FTS: a statement that fires triggers (DOCS has them) makes FTS5
        # write out the terms it holds for the transaction, so alternating the two tables wrote the FTS
        # index once per document rather than once per batch (a third more CPU per row, issue 36).
        for doc in replaced:
            cursor.execute(
                f"UPDATE {DOCS} SET folder_id = %s, path = %s, title = %s, modified = %s WHERE id = %s",
                [doc.folder_id, doc.path, parts[doc.doc_id][0], doc.modified, ids[doc.doc_id]],
            )
        if new:
            cursor.executemany(
                f"INSERT INTO {DOCS} (doc_id, folder_id, path, title, modified) VALUES (%s, %s, %s, %s, %s)",
                [[doc.doc_id, doc.folder_id, doc.path, parts[doc.doc_id][0], doc.modified] for doc in new],
            )
            ids.update(_row_ids(cursor, [doc.doc_id for doc in new]))
        for doc in replaced:
            cursor.execute(
                f"UPDATE {FTS} SET title = %s, meta = %s, body = %s WHERE rowid = %s",
                [*parts[doc.doc_id], ids[doc.doc_id]],
            )
        if new:
            cursor.executemany(
                f"INSERT INTO {FTS} (rowid, title, meta, body) VALUES (%s, %s, %s, %s)",
                [[ids[doc.doc_id], *parts[doc.doc_id]] for doc in new],
            )


def _row_ids(cursor: Any, doc_ids: list[str]) -> dict[str, int]:
    ids: dict[str, int] = {}
    for start in range(0, len(doc_ids), CHUNK):
        chunk = doc_ids[start : start + CHUNK]
        cursor.execute(
            f"SELECT doc_id, id FROM {DOCS} WHERE doc_id IN ({', '.join(['%s'] * len(chunk))})", chunk
        )
        ids.update(cursor.fetchall())
    return ids


def remove(doc_ids: Sequence[str]) -> None:
    with connection.cursor() as cursor:
        for start in range(0, len(doc_ids), CHUNK):
            chunk = list(doc_ids[start : start + CHUNK])
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"DELETE FROM {FTS} WHERE rowid IN (SELECT id FROM {DOCS} WHERE doc_id IN ({marks}))", chunk
            )
            cursor.execute(f"DELETE FROM {DOCS} WHERE doc_id IN ({marks})", chunk)


def clear() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {FTS}")
        cursor.execute(f"DELETE FROM {DOCS}")


def indexed(folder_id: int | None) -> dict[str, IndexedEntry]:
    return indexed_rows(DOCS, folder_id)


# Django keeps a SQLite datetime as UTC text, "YYYY-MM-DD HH:MM:SS" with ".ffffff" unless the microseconds
# are 0. Whole microseconds divided once, as `timedelta.total_seconds()` does, give the same float. The
# seconds come from the first 19 characters alone: strftime rounds a fraction to milliseconds, so
# ":59.9999995" would count as the next second.
_EPOCH = (
    "((CAST(strftime('%%s', substr(d.modified, 1, 19)) AS INTEGER) * 1000000"
    " + CASE WHEN instr(d.modified, '.') > 0"
    " THEN CAST(substr(d.modified || '000000', instr(d.modified, '.') + 1, 6) AS INTEGER) ELSE 0 END)"
    " / 1000000.0)"
)


def stale(documents: str, params: list[Any], folder_id: int | None) -> tuple[list[str], list[str]]:
    return stale_rows(DOCS, documents=documents, params=params, folder_id=folder_id, epoch=_EPOCH)


# Answers kept per connection while nothing they depend on has changed: bm25 over a word in nearly every
# one of 100,000 notes costs tens of milliseconds even in the title tier, and assistants repeat searches.
ANSWERS_KEPT = 64
GENERATION = "lensrelay_search_generation"
_answers: WeakKeyDictionary[Any, tuple[Any, OrderedDict[tuple[Any, ...], tuple[int, list[Hit]]]]]
_answers = WeakKeyDictionary()


def _database_stamp(cursor: Any) -> int | None:
    """A counter that triggers move on every write an answer may depend on (migration 0010): the index
    rows, and documents' and folders' rows except for what no answer shows (a live edit moves a
    document's `modified` many times a second, and committed update logs touch nothing here). Committed
    by whichever connection or process wrote. None inside a transaction: an answer there may hold rows a
    rollback undoes, and the counter would come back down to values such an answer carried."""
    if connection.in_atomic_block or connection.connection.in_transaction:
        return None
    cursor.execute(f"SELECT n FROM {GENERATION}")
    (generation,) = cursor.fetchone()
    return int(generation)


def _kept_answers() -> OrderedDict[tuple[Any, ...], tuple[int, list[Hit]]]:
    wrapper = connections[DEFAULT_DB_ALIAS]  # this thread's, not the proxy every thread shares
    raw = wrapper.connection
    kept = _answers.get(wrapper)
    if kept is None or kept[0] is not raw:  # a new connection starts its own counters
        kept = _answers[wrapper] = (raw, OrderedDict())
    return kept[1]


def query(
    parsed: ParsedQuery, *, folder_ids: list[int] | None, path_prefix: str | None, limit: int
) -> list[Hit]:
    key = (fts5_expression(parsed), None if folder_ids is None else tuple(folder_ids), path_prefix, limit)
    with connection.cursor() as cursor:
        stamp = _database_stamp(cursor)
    if stamp is None:
        return _query(parsed, folder_ids=folder_ids, path_prefix=path_prefix, limit=limit)
    kept = _kept_answers()
    answer = kept.get(key)
    if answer is not None and answer[0] == stamp:
        kept.move_to_end(key)
        return list(answer[1])
    hits = _query(parsed, folder_ids=folder_ids, path_prefix=path_prefix, limit=limit)
    kept[key] = (stamp, hits)
    kept.move_to_end(key)
    while len(kept) > ANSWERS_KEPT:
        kept.popitem(last=False)
    return list(hits)


def _query(
    parsed: ParsedQuery, *, folder_ids: list[int] | None, path_prefix: str | None, limit: int
) -> list[Hit]:
    # Two tiers: documents with a searched word in their title first, then the rest by bm25. A word in
    # nearly every one of 100,000 notes otherwise makes bm25 rank 100,000 rows (150-800 ms, whatever the
    # query shape), and even restricted to title matches its idf counts every document of each phrase.
    # The title tier is ranked in the titles' own small index (migration 0011): more of the searched
    # words, rarer ones and shorter titles first, ties by folder and path. It usually fills the page, so
    # the rest is then never ranked; when it is, the NOT-ed title phrases have no hits there and add
    # exactly 0 to its bm25.
    expression = fts5_expression(parsed)
    ranked = _title_tier(parsed, expression, folder_ids=folder_ids, path_prefix=path_prefix, limit=limit)
    if len(ranked) < limit:
        ranked += _ranked(
            f"({expression}) NOT {fts5_in_column(parsed, 'title')}",
            folder_ids=folder_ids,
            path_prefix=path_prefix,
            limit=limit - len(ranked),
        )
    if not ranked:
        return []
    with connection.cursor() as cursor:
        rowids = [row[0] for row in ranked]
        cursor.execute(
            f"SELECT rowid, snippet({FTS}, {BODY_COLUMN}, %s, %s, '…', %s) FROM {FTS} "
            f"WHERE {FTS} MATCH %s AND rowid IN ({', '.join(['%s'] * len(rowids))})",
            [HIGHLIGHT_START, HIGHLIGHT_STOP, SNIPPET_WORDS, expression, *rowids],
        )
        snippets = dict(cursor.fetchall())
    return [
        Hit(
            doc_id=doc_id,
            path=path,
            folder=folder,
            title=title,
            snippet=finish_snippet(snippets.get(rowid) or ""),
            score=-score,
        )
        for rowid, doc_id, path, folder, title, score in ranked
    ]


Row = tuple[int, str, str, str, str, float]  # rowid, doc_id, path, folder name, title, bm25


def _scope(*, folder_ids: list[int] | None, path_prefix: str | None) -> tuple[list[str], list[Any]]:
    """The conditions (on `d`, the documents) and their parameters that keep a search inside its scope."""
    where: list[str] = []
    params: list[Any] = []
    if folder_ids is not None:
        where.append(f"d.folder_id IN ({', '.join(['%s'] * len(folder_ids))})")
        params.extend(folder_ids)
    if path_prefix:
        where.append("substr(d.path, 1, %s) = %s")
        params.extend([len(path_prefix), path_prefix])
    return where, params


def _title_tier(
    parsed: ParsedQuery,
    expression: str,
    *,
    folder_ids: list[int] | None,
    path_prefix: str | None,
    limit: int,
) -> list[Row]:
    """The best `limit` matches with a searched word in their title, by the titles' bm25."""
    titles = fts5_any_required(parsed)
    # One clause and no exclusion: a title holding one of its terms matches the query. Otherwise the
    # other clauses must match somewhere, which the full index tells for a page of candidates at a time.
    implied = len(parsed.clauses) == 1
    if folder_ids is None and not path_prefix:
        return _title_tier_unscoped(titles, None if implied else expression, limit=limit)
    scope, scope_params = _scope(folder_ids=folder_ids, path_prefix=path_prefix)
    where = [f"{TITLES} MATCH %s", *scope]
    params: list[Any] = [titles, *scope_params]
    sql = f"""
        SELECT t.rowid, s.doc_id, d.path, f.name, s.title, bm25({TITLES}) AS score
        FROM {TITLES} t
        JOIN {DOCS} s ON s.id = t.rowid
        JOIN lensrelay_document d ON d.doc_id = s.doc_id
        JOIN lensrelay_folder f ON f.id = d.folder_id
        WHERE {" AND ".join(where)}
        ORDER BY score, f.name, d.path
    """
    if implied:
        sql += " LIMIT %s"
        params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        candidates: list[Row] = list(cursor.fetchall())
    if implied:
        return candidates
    return _matching(candidates, expression, wanted=limit)[:limit]


def _title_tier_unscoped(titles: str, expression: str | None, *, limit: int) -> list[Row]:
    """Rank in the titles alone and join only the best, as `_ranked` does unscoped: a page wider than
    asked, so entries whose document row is gone do not shorten the answer, and ties are put in folder
    and path order unless more than the whole page score exactly the same."""
    page = 4 * limit + 50
    ranked: list[tuple[int, float]] = []
    offset = 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                f"SELECT rowid, bm25({TITLES}) AS score FROM {TITLES} WHERE {TITLES} MATCH %s "
                "ORDER BY score LIMIT %s OFFSET %s",
                [titles, page, offset],
            )
            batch: list[tuple[int, float]] = list(cursor.fetchall())
            offset += len(batch)
            ranked += batch if expression is None else _matching(batch, expression, wanted=page)
            if len(ranked) >= page or len(batch) < page:
                break
        ranked = ranked[:page]
        if not ranked:
            return []
        scores = dict(ranked)
        marks = ", ".join(["%s"] * len(ranked))
        cursor.execute(
            f"""
            SELECT s.id, s.doc_id, d.path, f.name, s.title FROM {DOCS} s
            JOIN lensrelay_document d ON d.doc_id = s.doc_id
            JOIN lensrelay_folder f ON f.id = d.folder_id
            WHERE s.id IN ({marks})
            """,
            list(scores),
        )
        joined = [(*row, scores[row[0]]) for row in cursor.fetchall()]
    # Python orders str by code point, as SQLite's BINARY collation orders UTF-8 bytes.
    joined.sort(key=lambda row: (row[5], row[3], row[2]))
    return joined[:limit]


_Candidate = TypeVar("_Candidate", bound=tuple[Any, ...])


def _matching(candidates: list[_Candidate], expression: str, *, wanted: int) -> list[_Candidate]:
    """The candidates (rowid first) that match `expression` in the full index, in their order: checked
    a page at a time until `wanted` are found."""
    found: list[_Candidate] = []
    page = max(wanted, 100)
    with connection.cursor() as cursor:
        for start in range(0, len(candidates), page):
            chunk = candidates[start : start + page]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"SELECT rowid FROM {FTS} WHERE {FTS} MATCH %s AND rowid IN ({marks})",
                [expression, *(row[0] for row in chunk)],
            )
            matching = {rowid for (rowid,) in cursor.fetchall()}
            found += [row for row in chunk if row[0] in matching]
            if len(found) >= wanted:
                break
    return found


def _ranked(
    expression: str, *, folder_ids: list[int] | None, path_prefix: str | None, limit: int
) -> list[Row]:
    """The best `limit` matches of an FTS5 expression: (rowid, doc_id, path, folder, title, bm25)."""
    scope, scope_params = _scope(folder_ids=folder_ids, path_prefix=path_prefix)
    where = [f"{FTS} MATCH %s", *scope]
    params: list[Any] = [TITLE_WEIGHT, META_WEIGHT, BODY_WEIGHT, expression, *scope_params]
    params.append(limit)
    # Rank first and make snippets only for the winners: snippet() costs far more than bm25().
    ranking = f"""
        SELECT {FTS}.rowid, s.doc_id, d.path, f.name, s.title, bm25({FTS}, %s, %s, %s) AS score
        FROM {FTS}
        JOIN {DOCS} s ON s.id = {FTS}.rowid
        JOIN lensrelay_document d ON d.doc_id = s.doc_id
        JOIN lensrelay_folder f ON f.id = d.folder_id
        WHERE {" AND ".join(where)}
        ORDER BY score, f.name, d.path
        LIMIT %s
    """
    if folder_ids is None and not path_prefix:
        # Unscoped: rank inside the index alone and join only the best. A word in every one of 100,000
        # notes otherwise joins all 100,000 rows before sorting (4x slower). The inner page is wider than
        # asked, so index rows without a document row (gone meanwhile) do not shorten the answer, and ties
        # are put in folder and path order unless more than the whole inner page score exactly the same
        # (then which of them make the page follows the index's order).
        params = [TITLE_WEIGHT, META_WEIGHT, BODY_WEIGHT, expression, 4 * limit + 50, limit]
        ranking = f"""
            SELECT r.rowid, s.doc_id, d.path, f.name, s.title, r.score
            FROM (
                SELECT rowid, bm25({FTS}, %s, %s, %s) AS score FROM {FTS} WHERE {FTS} MATCH %s
                ORDER BY score LIMIT %s
            ) r
            JOIN {DOCS} s ON s.id = r.rowid
            JOIN lensrelay_document d ON d.doc_id = s.doc_id
            JOIN lensrelay_folder f ON f.id = d.folder_id
            ORDER BY r.score, f.name, d.path
            LIMIT %s
        """
    with connection.cursor() as cursor:
        cursor.execute(ranking, params)
        return list(cursor.fetchall())
