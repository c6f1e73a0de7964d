"""Statements that PostgreSQL binds itself, for the few that run often enough for the binding to show.

Django's PostgreSQL cursors bind on the client: every parameter is quoted into the SQL text in Python, an
update's bytes and a list of ids alike. For a statement on the live path, or one a watch runs twice a second
over every open document, that quoting cost more than the statement (issue 36). Here the parameters travel
apart from the SQL (bytes in binary, a list as one array) through a psycopg cursor on Django's own
connection, never prepared, so that a pooler in transaction mode (PgBouncer) sees nothing it cannot route.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from django.db import connection


def server_bound_rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of one statement (psycopg's `%s` placeholders) on Django's PostgreSQL connection, with
    Django's errors, as from its own cursors: callers and the store's outage handling know those."""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=False)
        return cursor.fetchall()


def text_array_literal(texts: Sequence[str]) -> str:
    """PostgreSQL's text form of a text[], for `= ANY(%s::text[])`: one parameter, where psycopg would dump
    a list element by element in Python. Each element quoted, its backslashes and quotes escaped."""
    quoted = (text.replace("\\", "\\\\").replace('"', '\\"') for text in texts)
    return "{" + ",".join(f'"{text}"' for text in quoted) + "}"
