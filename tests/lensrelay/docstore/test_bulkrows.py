"""Plain-SQL multi-row inserts (lensrelay.docstore.bulkrows) write what bulk_create would, on every
database."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from lensrelay.docstore.bulkrows import db_value, insert_returning, insert_rows
from lensrelay.models import Document, YDoc, YUpdate

pytestmark = pytest.mark.django_db(transaction=True)


def test_returned_ids_name_their_rows_across_batches() -> None:
    moment = timezone.now()
    # More rows than one statement takes (SQLite binds at most 999 parameters: 199 rows of 5).
    rows = [
        (f"doc-{n}", bytes([n % 256]) * 3, "writer", f"author {n}", db_value(moment)) for n in range(1200)
    ]
    returned = insert_returning(
        YUpdate,
        columns=("doc_id", "data", "writer", "author", "created"),
        rows=rows,
        returning=("doc_id", "id"),
    )
    assert returned is not None and len(returned) == 1200
    stored = {row.id: row for row in YUpdate.objects.all()}
    for doc_id, row_id in returned:
        row = stored[row_id]
        n = int(doc_id.removeprefix("doc-"))
        assert (row.doc_id, bytes(row.data), row.writer, row.author) == (
            doc_id,
            bytes([n % 256]) * 3,
            "writer",
            f"author {n}",
        )
        assert row.created == moment


def test_conflicting_rows_are_skipped_only_when_asked(make_folder: Any) -> None:
    folder = make_folder("Lens")
    YDoc.objects.create(doc_id="taken", kind=YDoc.Kind.CONTENT, content_hash="old")
    columns = ("doc_id", "kind", "folder", "created", "content_hash", "content_upto")
    now = db_value(timezone.now())
    insert_rows(
        YDoc,
        columns=columns,
        rows=[("taken", "content", folder.pk, now, "new", 7), ("free", "content", folder.pk, now, "h", 9)],
        ignore_conflicts=True,
    )
    assert YDoc.objects.get(doc_id="taken").content_hash == "old"
    free = YDoc.objects.get(doc_id="free")
    assert (free.folder_id, free.content_hash, free.content_upto) == (folder.pk, "h", 9)
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(YDoc, columns=columns, rows=[("taken", "content", folder.pk, now, "x", 1)])
    assert YDoc.objects.filter(doc_id="taken").count() == 1


def test_foreign_keys_and_datetimes_are_stored_as_the_orm_reads_them(make_folder: Any) -> None:
    folder = make_folder("Lens")
    moment = timezone.now()
    insert_rows(
        Document,
        columns=("folder", "uuid", "doc_id", "path", "type", "hash", "created", "modified"),
        rows=[(folder.pk, "u1", "d1", "/A.md", "markdown", "", db_value(moment), db_value(moment))],
    )
    document = Document.objects.get(doc_id="d1")
    assert (document.folder, document.path, document.created, document.modified) == (
        folder,
        "/A.md",
        moment,
        moment,
    )
