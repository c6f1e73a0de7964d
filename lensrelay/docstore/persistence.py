"""Database side of the document store. Synchronous: callers run it off the event loop."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, Max, Model
from django.utils import timezone
from pycrdt import Doc, Text, merge_updates

from lensrelay.docstore.inlists import rows_in
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.serverbound import server_bound_rows
from lensrelay.docstore.tombstones import refuse_purged
from lensrelay.models import Document, Folder, YDoc, YSnapshot, YUpdate

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredState:
    update: bytes | None
    last_update_id: int
    log_rows: int


def _merged(updates: list[bytes]) -> bytes | None:
    if not updates:
        return None
    return updates[0] if len(updates) == 1 else merge_updates(*updates)


def doc_kind(doc_id: str) -> str | None:
    return YDoc.objects.filter(doc_id=doc_id).values_list("kind", flat=True).first()


def load_state(doc_id: str) -> StoredState:
    """The document's whole stored state, consistent even while another process compacts it.

    The log is read before the snapshot: a compaction that commits in between has folded the rows it
    deleted into the snapshot read after, so no update is missed whatever the isolation level. Rows
    read that were folded meanwhile are applied twice, which a CRDT ignores.
    """
    rows = list(YUpdate.objects.filter(doc_id=doc_id).order_by("id").values_list("id", "data"))
    snapshot = YSnapshot.objects.filter(doc_id=doc_id).values_list("data", "upto_update_id").first()
    return stored_state(rows, snapshot)


def stored_state(
    rows: Sequence[tuple[int, bytes | memoryview]], snapshot: tuple[bytes | memoryview, int] | None
) -> StoredState:
    """The state that a document's log rows (id, data; by id) and its snapshot (data, upto) make."""
    upto = snapshot[1] if snapshot else 0
    updates = ([bytes(snapshot[0])] if snapshot else []) + [bytes(data) for _, data in rows]
    last_id = max([upto, *(row_id for row_id, _ in rows)])
    return StoredState(
        update=_merged(updates), last_update_id=last_id, log_rows=sum(1 for i, _ in rows if i > upto)
    )


def stored_text(doc_id: str, *, name: str = "contents") -> str | None:
    """A content document's text as persisted (every change is logged before anyone sees it)."""
    state = load_state(doc_id)
    if state.update is None:
        return None
    doc: Doc[Any] = Doc()
    doc.apply_update(state.update)
    return str(doc.get(name, type=Text))


def stored_texts(doc_ids: list[str], *, name: str = "contents") -> dict[str, str]:
    """Many documents' texts in a few queries (for warming caches and indexes after an import)."""
    texts: dict[str, str] = {}
    for start in range(0, len(doc_ids), 500):
        chunk = doc_ids[start : start + 500]
        # Log before snapshots, as in load_state: a concurrent compaction cannot hide a row.
        updates: dict[str, list[bytes]] = {doc_id: [] for doc_id in chunk}
        rows = YUpdate.objects.filter(doc_id__in=chunk).order_by("id").values_list("doc_id", "data")
        for doc_id, data in rows:
            updates[doc_id].append(bytes(data))
        snapshots = dict(YSnapshot.objects.filter(doc_id__in=chunk).values_list("doc_id", "data"))
        for doc_id in chunk:
            doc: Doc[Any] = Doc()
            if doc_id in snapshots:
                doc.apply_update(bytes(snapshots[doc_id]))
            for update in updates[doc_id]:
                doc.apply_update(update)
            texts[doc_id] = str(doc.get(name, type=Text))
    return texts


def append_update(doc_id: str, update: bytes, *, is_content: bool, writer: str, author: str = "") -> int:
    """Log one update durably; returns its id. Content documents also get their modified time bumped."""
    return append_updates([(doc_id, update, is_content, author)], writer=writer)[0]


def append_updates(entries: Sequence[tuple[str, bytes, bool, str]], *, writer: str) -> list[int]:
    """Log (doc_id, update, touch, author) entries in one transaction; returns their ids in order. Documents
    with `touch` also get their modified time bumped.

    Plain SQL, one statement for the whole batch: this runs for every live change before anyone else sees
    it, and the ORM's per-row work (a model instance, signals, compiling the query) or a round trip per row
    costs more than the insert itself (on PostgreSQL it ran in a thread that held the interpreter lock the
    event loop was waiting for).
    """
    if not entries:
        return []
    now = timezone.now()
    created = connection.ops.adapt_datetimefield_value(now)
    q = connection.ops.quote_name
    columns = ", ".join(q(name) for name in ("doc_id", "data", "writer", "author", "created"))
    rows = ", ".join(["(%s, %s, %s, %s, %s)"] * len(entries))
    params: list[Any] = []
    for doc_id, update, _, author in entries:
        params += [doc_id, update, writer, author[:200], created]
    touched = sorted({doc_id for doc_id, _, touch, _ in entries if touch})
    table = q(YUpdate._meta.db_table)
    # One statement's rows take their ids in the order of its VALUES, each larger than the last.
    returning = f"INSERT INTO {table} ({columns}) VALUES {rows} RETURNING {q('id')}"
    if connection.vendor == "postgresql" and not touched:
        # The live path's case (issue 36): one statement, so no transaction around it (Django's would cost
        # a BEGIN and a COMMIT round trip beside the insert; a statement in autocommit is as durable), and
        # bound by the server: Django's cursors quote every update into the SQL text in Python.
        return sorted(int(row[0]) for row in server_bound_rows(returning, params))
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.features.can_return_columns_from_insert:
            cursor.execute(returning, params)
            ids = sorted(int(row[0]) for row in cursor.fetchall())
        else:
            ids = []
            single = f"INSERT INTO {table} ({columns}) VALUES (%s, %s, %s, %s, %s)"
            for start in range(0, len(params), 5):
                cursor.execute(single, params[start : start + 5])
                ids.append(int(cursor.lastrowid))
        if touched:
            _touch(cursor, touched, created)
    return ids


def _touch(cursor: Any, doc_ids: Sequence[str], modified: Any) -> None:
    q = connection.ops.quote_name
    marks = ", ".join(["%s"] * len(doc_ids))
    table = q(Document._meta.db_table)
    cursor.execute(
        f"UPDATE {table} SET {q('modified')} = %s WHERE {q('doc_id')} IN ({marks})", [modified, *doc_ids]
    )


def touch_modified(doc_ids: Sequence[str]) -> None:
    """Notes changed lately get the time now (docstore.modified: one statement for a store's every few
    seconds)."""
    with connection.cursor() as cursor:
        _touch(cursor, doc_ids, connection.ops.adapt_datetimefield_value(timezone.now()))


@dataclass(frozen=True)
class Compacted:
    """What one compaction folded: the new snapshot's state and the log rows' ids and authors."""

    doc_id: str
    state: bytes
    upto_update_id: int
    authors: list[tuple[int, str]]


CompactionListener = Callable[[Compacted], None]
_compaction_listeners: list[CompactionListener] = []


def on_compacted(listener: CompactionListener) -> CompactionListener:
    """Called (in the database thread) after a compaction committed; a failure there is only logged."""
    _compaction_listeners.append(listener)
    return listener


def compact(doc_id: str) -> int:
    """Merge the snapshot and the log into a new snapshot; returns how many log rows were folded in.

    Exactly the rows read are folded and deleted: a row whose id was reserved earlier but committed
    later (concurrent writers) stays in the log. Processes that had not read a folded row find the
    snapshot through `changes_since` and merge it. Listeners (version history) run after the commit, so
    they never hold the snapshot's lock nor undo the compaction by failing.
    """
    with transaction.atomic():
        snapshot = YSnapshot.objects.select_for_update().filter(doc_id=doc_id).first()
        rows = list(YUpdate.objects.filter(doc_id=doc_id).order_by("id").values_list("id", "data", "author"))
        if not rows:
            return 0
        updates = ([bytes(snapshot.data)] if snapshot else []) + [bytes(d) for _, d, _ in rows]
        merged = _merged(updates)
        assert merged is not None
        upto = max(rows[-1][0], snapshot.upto_update_id if snapshot else 0)
        YSnapshot.objects.update_or_create(
            doc_id=doc_id,
            defaults={"data": merged, "upto_update_id": upto, "updated": timezone.now()},
        )
        ids = [row_id for row_id, _, _ in rows]
        for start in range(0, len(ids), 500):
            YUpdate.objects.filter(id__in=ids[start : start + 500]).delete()
    done = Compacted(doc_id, merged, upto, [(row_id, author) for row_id, _, author in rows])
    for listener in _compaction_listeners:
        with failures_logged(logger, "compaction listener %r for %s", listener, doc_id):
            listener(done)
    return len(rows)


@dataclass(frozen=True)
class Changes:
    """What other processes logged after a log id, and the snapshots that may have folded some of it."""

    rows: list[tuple[int, str, bytes]]
    # (doc_id, upto_update_id) of snapshots covering ids after the cursor: their documents may have
    # lost log rows this process never read, so it reloads their state instead.
    snapshots: list[tuple[str, int]]


def changes_since(
    *,
    after_id: int,
    writer: str,
    loaded: frozenset[str] | None = None,
    handled: frozenset[int] = frozenset(),
    limit: int = 2000,
) -> Changes:
    """Updates logged by other processes (workers, management commands) after `after_id`.

    Only rows of `loaded` documents (None: all) that are not `handled` already (applied from the
    channel layer, or on an earlier poll) come back with their data; the others name their document.
    Snapshots are read after the log: a compaction that deleted rows before the log was read has
    committed its snapshot by then.
    """
    # Plain statements: the derive process and every worker's poll ask on every pass, and the ORM took
    # longer to build and read them than the database to answer (issue 36).
    log = connection.ops.quote_name(YUpdate._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, doc_id FROM {log} WHERE id > %s AND writer <> %s ORDER BY id LIMIT %s",
            [after_id, writer, limit],
        )
        ids: list[tuple[int, str]] = cursor.fetchall()
    wanted = [
        row_id for row_id, doc_id in ids if row_id not in handled and (loaded is None or doc_id in loaded)
    ]
    read = rows_in(f"SELECT id, data FROM {log} WHERE id IN ({{ids}})", wanted)
    data = {row_id: bytes(d) for row_id, d in read}
    # A row compacted away between the two queries is in the snapshot read below.
    found = [(row_id, doc_id, data.get(row_id, b"")) for row_id, doc_id in ids]
    snapshots = snapshots_past(after_id)
    return Changes(rows=found, snapshots=snapshots)


def stored_time(model: type[Model], name: str) -> Callable[[Any], datetime]:
    """What turns a date-time column read by a plain statement into what the ORM would have returned (on
    SQLite a naive time is made aware; PostgreSQL's driver returns aware times itself)."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field)
    column = field.get_col(model._meta.db_table)
    converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)

    def convert(value: Any) -> datetime:
        for converter in converters:
            value = converter(value, column, connection)
        return value

    return convert


def snapshots_past(after_id: int) -> list[tuple[str, int]]:
    """(doc_id, upto) of the snapshots that fold log rows after `after_id`."""
    table = connection.ops.quote_name(YSnapshot._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT doc_id, upto_update_id FROM {table} WHERE upto_update_id > %s", [after_id])
        return list(cursor.fetchall())


# A log entry under this id changes no document: it tells every process to re-read the folder list.
FOLDERS_CHANGED = "lensrelay.vault.folders-changed"
EMPTY_UPDATE = b"\x00\x00"


def announce_folders_changed(*, writer: str) -> None:
    YUpdate.objects.create(doc_id=FOLDERS_CHANGED, data=EMPTY_UPDATE, writer=writer)


# A log entry under this id tells every process that documents were purged: each closes the sockets and
# drops the rooms it still has of them (`lensrelay.vault.purge`).
DOCUMENTS_PURGED = "lensrelay.vault.documents-purged"


def announce_documents_purged(*, writer: str) -> None:
    YUpdate.objects.create(doc_id=DOCUMENTS_PURGED, data=EMPTY_UPDATE, writer=writer)


def last_update_id() -> int:
    return YUpdate.objects.aggregate(m=Max("id"))["m"] or 0


@dataclass(frozen=True)
class FeedOrigin:
    """Where a process starts following the log: the newest id, and the ids within the catch-up window
    below it that were already committed then (whatever the process reads from now on includes them)."""

    last_update_id: int
    committed: frozenset[int]


def feed_origin_sql(table: str, placeholder: str) -> str:
    # One statement, so one snapshot on every database: a row committed later (a late commit below the
    # newest id, on PostgreSQL) is not among the ids, and the catch-up still hands it on.
    return (
        f'SELECT "id" FROM "{table}" WHERE "id" > '
        f'COALESCE((SELECT MAX("id") FROM "{table}"), 0) - {placeholder}'
    )


def feed_origin_from(ids: Sequence[int]) -> FeedOrigin:
    return FeedOrigin(last_update_id=max(ids, default=0), committed=frozenset(ids))


def feed_origin(*, window: int) -> FeedOrigin:
    with connection.cursor() as cursor:
        cursor.execute(feed_origin_sql(YUpdate._meta.db_table, "%s"), [window])
        return feed_origin_from([row_id for (row_id,) in cursor.fetchall()])


def create_ydoc(doc_id: str, kind: str) -> bool:
    """Register a document id; returns True if it was new. Raises DocumentPurged for a purged id."""
    refuse_purged(doc_id)
    _, created = YDoc.objects.get_or_create(doc_id=doc_id, defaults={"kind": kind})
    return created


def content_doc_register(*, folder: Folder, doc_id: str) -> None:
    """Record a content document created for `folder` before its folder entry names it. Raises
    DocumentPurged for a purged id."""
    refuse_purged(doc_id)
    _, created = YDoc.objects.get_or_create(
        doc_id=doc_id, defaults={"kind": YDoc.Kind.CONTENT, "folder": folder}
    )
    if not created:
        YDoc.objects.filter(doc_id=doc_id, kind=YDoc.Kind.CONTENT, folder__isnull=True).update(folder=folder)
