"""Many rows inserted in plain SQL: an import writes tens of thousands of them.

`QuerySet.bulk_create` builds a model instance per row and prepares every field of it in Python
(`field_as_sql`, `get_db_prep_save`): for a 10,000-note import that cost more than the inserts
themselves. Callers pass values already in their database form (`db_value` for datetimes) and name the
columns; no signal is sent, as with `bulk_create`. Synchronous: run it on a database thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from django.db.models.constants import OnConflict


def db_value(moment: datetime) -> Any:
    """A datetime as this database stores it (what the ORM would bind for a DateTimeField)."""
    return connection.ops.adapt_datetimefield_value(moment)


def _column(model: type[Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.column is not None, name
    return field.column


def _insert_sql(
    model: type[Model], columns: Sequence[str], on_conflict: OnConflict | None
) -> tuple[str, str]:
    """(`INSERT INTO table (columns) VALUES `, the suffix that handles conflicts, often '')."""
    q = connection.ops.quote_name
    fields = [model._meta.get_field(name) for name in columns]
    suffix = connection.ops.on_conflict_suffix_sql(fields, on_conflict, None, None)
    return (
        f"{connection.ops.insert_statement(on_conflict=on_conflict)} {q(model._meta.db_table)} "
        f"({', '.join(q(_column(model, name)) for name in columns)}) VALUES "
    ), suffix


def insert_rows(
    model: type[Model],
    *,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    ignore_conflicts: bool = False,
) -> None:
    """INSERT every row (values in the order of `columns`, field names); with `ignore_conflicts`, rows
    that would break a unique constraint are skipped, as `bulk_create(ignore_conflicts=True)` does."""
    if not rows:
        return
    head, suffix = _insert_sql(model, columns, OnConflict.IGNORE if ignore_conflicts else None)
    marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        cursor.executemany(f"{head}{marks} {suffix}".rstrip(), rows)


def insert_returning(
    model: type[Model], *, columns: Sequence[str], rows: Sequence[Sequence[Any]], returning: Sequence[str]
) -> list[tuple[Any, ...]] | None:
    """INSERT every row and return the `returning` columns of each (in no promised order: return a
    column that names the row); None on a database that cannot return rows from a multi-row INSERT."""
    if not rows:
        return []
    if not connection.features.can_return_rows_from_bulk_insert:
        insert_rows(model, columns=columns, rows=rows)
        return None
    q = connection.ops.quote_name
    head, _ = _insert_sql(model, columns, None)
    marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
    # SQLite binds at most 999 parameters per statement (Django's own limit for it).
    size = max(1, (connection.features.max_query_params or 65535) // len(columns))
    size = min(size, 500)
    tail = " RETURNING " + ", ".join(q(_column(model, name)) for name in returning)
    found: list[tuple[Any, ...]] = []
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            batch = rows[start : start + size]
            params = [value for row in batch for value in row]
            cursor.execute(head + ", ".join([marks] * len(batch)) + tail, params)
            found.extend(tuple(row) for row in cursor.fetchall())
    return found
