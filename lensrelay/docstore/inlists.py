"""Ids for `IN (…)` lists, a bounded number to a statement.

A default SQLite build binds at most 32,766 parameters to a statement, and other databases have limits of
their own: a query over any number of documents reads them in chunks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# Ids per `IN (…)`, well within every database's limit on a statement's parameters.
IN_CHUNK = 500


def in_chunks(items: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    """`items` in slices of at most `size`, in order."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
