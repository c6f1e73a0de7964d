"""Plain statements over any number of ids: chunked, bound, and hostile ids read as ids."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lensrelay.docstore.inlists import IN_CHUNK, rows_in
from lensrelay.models import YDoc

pytestmark = pytest.mark.django_db

HOSTILE = ["it's", 'say "hi"', "%s", "{ids}", "a%_\\", "x') OR 1=1 --", "é" * 300]


def kinds_of(ids: list[str]) -> list[tuple[str, str]]:
    table = connection.ops.quote_name(YDoc._meta.db_table)
    return sorted(
        rows_in(
            f"SELECT doc_id, kind FROM {table} WHERE doc_id IN ({{ids}}) AND kind = %s",
            ids,
            after=["content"],
        )
    )


def test_ids_beyond_a_statements_bound_are_read_in_chunks_with_the_parameters_around_each() -> None:
    stored = [f"note-{n}" for n in range(IN_CHUNK * 2 + 7)]
    YDoc.objects.bulk_create([YDoc(doc_id=doc_id, kind="content") for doc_id in stored])
    YDoc.objects.create(doc_id="a-folder", kind="folder")
    asked = [*stored, "a-folder", "unknown"]
    with CaptureQueriesContext(connection) as queries:
        found = kinds_of(asked)
    assert found == sorted((doc_id, "content") for doc_id in stored)  # the folder's kind is not "content"
    assert len(queries.captured_queries) == 3
    assert kinds_of([]) == []


def test_hostile_ids_are_bound_values_found_when_stored_and_change_nothing() -> None:
    YDoc.objects.bulk_create([YDoc(doc_id=doc_id, kind="content") for doc_id in HOSTILE[:4]])
    assert kinds_of(HOSTILE) == sorted((doc_id, "content") for doc_id in HOSTILE[:4])
    assert kinds_of(HOSTILE[4:]) == []
    assert YDoc.objects.count() == 4
