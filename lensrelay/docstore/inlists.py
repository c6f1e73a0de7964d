"""Ids for `IN (…)` lists, a bounded number to a statement.

A default SQLite build binds at most 32,766 parameters to a statement, and other databases have limits of
their own: a query over any number of documents reads them in chunks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from django.db import connection

T = TypeVar("T")

# Ids per `IN (…)`, well within every database's limit on a statement's parameters.
IN_CHUNK = 500


def in_chunks(items: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    """`items` in slices of at most `size`, in order."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def rows_in(
    sql: str, ids: Sequence[Any], *, before: Sequence[Any] = (), after: Sequence[Any] = ()
) -> list[Any]:
    """The rows of a plain statement whose `{ids}` is an `IN` list of `ids`, run once per chunk of them;
    `before` and `after` are the parameters around the list. For the reads the derive process makes on
    every pass: the ORM's building of a small statement cost it ten times the database's answer (issue 36)."""
    rows: list[Any] = []
    with connection.cursor() as db:
        for part in in_chunks(ids):
            db.execute(sql.format(ids=", ".join(["%s"] * len(part))), [*before, *part, *after])
            rows += db.fetchall()
    return rows
