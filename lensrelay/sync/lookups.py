"""A token's access and a document's scope, read on the event loop when the database is SQLite.

Every first sync starts with these lookups. Through Django they are a trip to its sync thread and five
ORM queries; on a busy machine the trip alone (two thread wake-ups) took several milliseconds of a first
sync that the reference server finishes in under ten. In WAL mode a reader never waits for a writer, and
these reads take tens of microseconds, so they run here, in plain SQL, on a connection of the loop's own
that never waits for a lock. Nothing is kept between connects: each reads what is committed now, so a
revocation committed by any process refuses the very next connect.

Whenever this way cannot answer (not SQLite, the database busy or failing) it answers None and the caller
takes the trip, which does exactly what it did before. A token's last use, written at most once a minute
as `authenticate_token` does, is written by a trip the connect does not wait for.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from lensrelay.access.auth import LAST_USED_RESOLUTION, Access, token_access
from lensrelay.docstore.loopsqlite import ThreadSqlite
from lensrelay.models import ApiToken, Document, Folder, YDoc

logger = logging.getLogger(__name__)

Answer = tuple[Access | None, tuple[bool, int | None]]


def _sql() -> dict[str, str]:
    through = ApiToken.folders.through._meta
    return {
        "token": (
            f'SELECT "id", "name", "role", "expires_at", "revoked_at", "last_used_at" '
            f'FROM "{ApiToken._meta.db_table}" WHERE "token_hash" = ?'
        ),
        "folders": (
            f'SELECT "{through.get_field("folder").column}" FROM "{through.db_table}" '
            f'WHERE "{through.get_field("apitoken").column}" = ?'
        ),
        "folder_doc": f'SELECT "id" FROM "{Folder._meta.db_table}" WHERE "doc_id" = ? LIMIT 1',
        "document": f'SELECT "folder_id" FROM "{Document._meta.db_table}" WHERE "doc_id" = ? LIMIT 1',
        "ydoc": f'SELECT 1 FROM "{YDoc._meta.db_table}" WHERE "doc_id" = ? LIMIT 1',
    }


def _datetime(value: object) -> datetime | None:
    if value is None:
        return None
    parsed = value if isinstance(value, datetime) else parse_datetime(str(value))
    if parsed is not None and settings.USE_TZ and timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=UTC)  # Django keeps UTC in SQLite, without the offset
    return parsed


class LoopLookups:
    """Per thread (the server's loop): a connection to Django's SQLite file, autocommit, no busy wait."""

    def __init__(self) -> None:
        self._sqlite = ThreadSqlite()
        self._statements: dict[str, str] | None = None
        self._touches: dict[int, asyncio.Task[None] | None] = {}  # last-use writes under way

    def _connection(self) -> sqlite3.Connection | None:
        return self._sqlite.connection()

    def token_and_scope(self, raw: str, doc_id: str) -> Answer | None:
        """What `consumer.token_access_and_scope` answers, or None if this way cannot answer now."""
        try:
            conn = self._connection()
            if conn is None:
                return None
            if self._statements is None:
                self._statements = _sql()
            sql = self._statements
            conn.execute("BEGIN")  # one snapshot for every read below
            try:
                row = conn.execute(sql["token"], (ApiToken.hash_token(raw.strip()),)).fetchone()
                access: Access | None = None
                if row is not None:
                    token = ApiToken(
                        id=row[0],
                        name=row[1],
                        role=row[2],
                        expires_at=_datetime(row[3]),
                        revoked_at=_datetime(row[4]),
                        last_used_at=_datetime(row[5]),
                    )
                    if token.active:
                        last_used = token.last_used_at
                        if last_used is None or timezone.now() - last_used > LAST_USED_RESOLUTION:
                            self._touch(token.pk)
                        folder_ids = frozenset(r[0] for r in conn.execute(sql["folders"], (row[0],)))
                        access = token_access(token, folder_ids)
                scope = self._scope(conn, sql, doc_id)
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error:
            self._drop()
            return None
        return access, scope

    def _touch(self, token_id: int) -> None:
        """Record the token's use, as `authenticate_token` does, without the connect waiting for it
        (it only feeds the admin's "last used" column)."""
        pending = self._touches.setdefault(token_id, None)
        if pending is not None and not pending.done():
            return  # already on its way
        task = asyncio.get_running_loop().create_task(_write_last_use(token_id, timezone.now()))
        self._touches[token_id] = task
        task.add_done_callback(_log_failure)
        if len(self._touches) > 1000:
            self._touches = {k: t for k, t in self._touches.items() if t is not None and not t.done()}

    @staticmethod
    def _scope(conn: sqlite3.Connection, sql: dict[str, str], doc_id: str) -> tuple[bool, int | None]:
        # As lensrelay.vault.folders.doc_scope: a folder's own document, then a note's, then a standalone one.
        row = conn.execute(sql["folder_doc"], (doc_id,)).fetchone()
        if row is not None:
            return True, int(row[0])
        row = conn.execute(sql["document"], (doc_id,)).fetchone()
        if row is not None and row[0] is not None:
            return True, int(row[0])
        return conn.execute(sql["ydoc"], (doc_id,)).fetchone() is not None, None

    def _drop(self) -> None:
        self._sqlite.drop()


@sync_to_async
def _write_last_use(token_id: int, now: datetime) -> None:
    ApiToken.objects.filter(pk=token_id).update(last_used_at=now)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        logger.warning("recording a token's last use failed", exc_info=exc)


loop_lookups = LoopLookups()
