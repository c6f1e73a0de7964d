"""The comparison of the index with the documents, done inside the database, against the Python one it
replaced: the same documents to reindex and the same entries to remove, whatever the times and paths."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lensrelay.models import Document, Folder
from lensrelay.search import maintain
from lensrelay.search.index import search_clear, search_indexed, search_stale

pytestmark = pytest.mark.django_db

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def python_stale(folder_id: int | None) -> tuple[list[str], list[str]]:
    """The comparison as it was done before, in Python over every row of both sides."""
    rows = maintain._markdown_rows()
    current = {row.doc_id: row for row in rows if folder_id is None or row.folder_id == folder_id}
    indexed = search_indexed(folder_id=folder_id)
    outdated = [
        doc_id
        for doc_id, row in current.items()
        if (entry := indexed.get(doc_id)) is None
        or entry.path != row.path
        or entry.folder_id != row.folder_id
        or entry.modified < row.modified
    ]
    gone = [doc_id for doc_id in indexed if doc_id not in current]
    return outdated, gone


def sql_stale(folder_id: int | None) -> tuple[list[str], list[str]]:
    return search_stale(documents=maintain._markdown_documents(folder_id=folder_id), folder_id=folder_id)


# Microseconds since the epoch: whole seconds (Django then stores no fraction), the edges of a second's
# fraction, and anything up to the year 2200.
MICROS = st.one_of(
    st.integers(min_value=0, max_value=7_258_118_400).map(lambda s: s * 1_000_000),
    st.integers(min_value=0, max_value=7_258_118_400).flatmap(
        lambda s: st.sampled_from([1, 999_999, 500_000, 10, 123_456]).map(lambda f: s * 1_000_000 + f)
    ),
    st.integers(min_value=0, max_value=7_258_118_400_000_000),
)

# What happens to one document between its indexing and the comparison.
CHANGES = st.sampled_from(
    ["same", "later", "earlier", "moved", "other folder", "not indexed", "row gone", "trashed", "canvas"]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=st.lists(st.tuples(MICROS, CHANGES, st.booleans()), min_size=1, max_size=12))
def test_the_database_comparison_finds_what_the_python_one_found(
    documents: list[tuple[int, str, bool]],
) -> None:
    Document.objects.all().delete()
    Folder.objects.all().delete()
    search_clear()
    one, two = Folder.objects.create(name="One"), Folder.objects.create(name="Two")
    for number, (micros, change, in_two) in enumerate(documents):
        folder = two if in_two else one
        modified = EPOCH + timedelta(microseconds=micros)
        doc_id = uuid.uuid4().hex
        path = f"/Note {number}.md"
        doc = Document.objects.create(folder=folder, uuid=doc_id, doc_id=doc_id, path=path, modified=modified)
        # Indexed as the maintainer does: the row's modified time as read back through the ORM.
        read_back = Document.objects.get(pk=doc.pk).modified.timestamp()
        if change != "not indexed":
            entry_folder = (
                one if change == "other folder" and in_two else two if change == "other folder" else folder
            )
            maintain._write(
                [
                    maintain.DocumentRow(
                        doc_id=doc_id, folder_id=entry_folder.id, path=path, modified=read_back
                    )
                ],
                {doc_id: f"text {number}"},
                [],
            )
        later = modified + timedelta(microseconds=1)
        earlier = modified - timedelta(microseconds=1)
        updates: dict[str, object] = {
            "later": {"modified": later},
            "earlier": {"modified": earlier},
            "moved": {"path": f"/Moved {number}.md"},
            "trashed": {"path": f"/_trash/Note {number}.md"},
            "canvas": {"type": "canvas"},
        }.get(change, {})
        if change == "row gone":
            doc.delete()
        elif updates:
            Document.objects.filter(pk=doc.pk).update(**updates)
    for folder_id in (None, one.id, two.id):
        expected_outdated, expected_gone = python_stale(folder_id)
        outdated, gone = sql_stale(folder_id)
        assert sorted(outdated) == sorted(expected_outdated)
        assert sorted(gone) == sorted(expected_gone)


def test_an_unchanged_document_is_not_reindexed_and_a_microsecond_later_one_is() -> None:
    search_clear()
    folder = Folder.objects.create(name="Lens")
    # 0.1 + 0.2 style fractions whose float is not exact, and a whole second.
    times = [datetime(2026, 11, 23, 1, 2, 3, micros, tzinfo=UTC) for micros in (0, 1, 100_003, 999_999)]
    for number, modified in enumerate(times):
        Document.objects.create(
            folder=folder, uuid=str(number), doc_id=f"d{number}", path=f"/{number}.md", modified=modified
        )
    maintain._write(maintain._markdown_rows(), {f"d{number}": "x" for number in range(len(times))}, [])
    assert sql_stale(None) == ([], [])
    Document.objects.filter(doc_id="d2").update(modified=times[2] + timedelta(microseconds=1))
    assert sql_stale(None) == (["d2"], [])
    assert sql_stale(folder.id) == (["d2"], [])
    # An entry left by a document that is gone is removed, within its folder's comparison only.
    maintain._write(
        [maintain.DocumentRow(doc_id="ghost", folder_id=folder.id, path="/ghost.md", modified=0.0)],
        {"ghost": "boo"},
        [],
    )
    assert sql_stale(folder.id + 1) == ([], [])
    assert sql_stale(folder.id) == (["d2"], ["ghost"])
