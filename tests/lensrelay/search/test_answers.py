"""SQLite keeps search answers while nothing they depend on changes: every write to the index or to the
joined documents' paths and folders, here or on another connection, is seen by the next search; writes
that change no answer (an edit's logged update, a document's modified time) keep them; and a kept answer
is the one the query gives."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from lensrelay.models import Document, Folder, YUpdate
from lensrelay.search import sqlite
from lensrelay.search.index import search_query, search_remove_document
from lensrelay.search.query import parse_query
from tests.lensrelay.search.conftest import on_postgres
from tests.lensrelay.search.test_index import Vault, paths

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(on_postgres(), reason="the kept answers are SQLite's"),
]

WORDS = ["garden", "reading", "review", "meeting", "plan", "archive", "東京", "zebra"]


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The queries that reached FTS5 (answers not kept)."""
    calls: list[str] = []
    original = sqlite._query

    def counted(parsed: Any, **kwargs: Any) -> Any:
        calls.append(sqlite.fts5_expression(parsed))
        return original(parsed, **kwargs)

    monkeypatch.setattr(sqlite, "_query", counted)
    return calls


def test_a_kept_answer_is_the_one_the_query_gives(ran: list[str]) -> None:
    rng = random.Random(20261123)
    vault = Vault()
    for number in range(60):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30)))
        vault.add(f"{rng.choice(['Lens', 'Other'])}/Note {number}.md", words)
    folder_ids = [None, [vault.folder("Lens").pk]]
    queries = [
        "garden",
        "reading review",
        "東京",
        "meeting plan archive",
        "zebra OR plan",
        "gard*",
        "-zebra plan",
    ]
    for query in queries:
        for scope in folder_ids:
            for limit in (3, 20):
                first = search_query(query=query, folder_ids=scope, limit=limit)
                calls = len(ran)
                again = search_query(query=query, folder_ids=scope, limit=limit)
                assert len(ran) == calls  # kept
                assert again == first
                fresh = sqlite._query(
                    parse_query(query),
                    folder_ids=None if scope is None else sorted(scope),
                    path_prefix=None,
                    limit=limit,
                )
                assert again == fresh  # the same ranking, scores and snippets


def test_every_write_is_seen_by_the_next_search(ran: list[str]) -> None:
    vault = Vault()
    one = vault.add("Lens/One.md", "garden path")
    assert paths(search_query(query="garden", folder_ids=None)) == ["Lens/One.md"]
    assert paths(search_query(query="garden", folder_ids=None)) == ["Lens/One.md"]
    assert len(ran) == 1

    # An index write on this connection.
    vault.add("Lens/Two.md", "garden gate")
    assert sorted(paths(search_query(query="garden", folder_ids=None))) == ["Lens/One.md", "Lens/Two.md"]
    search_remove_document(doc_id=one)
    assert paths(search_query(query="garden", folder_ids=None)) == ["Lens/Two.md"]

    # The joined rows: a folder renamed, a document moved.
    Folder.objects.filter(name="Lens").update(name="Renamed")
    assert paths(search_query(query="garden", folder_ids=None)) == ["Renamed/Two.md"]
    Document.objects.filter(path="/Two.md").update(path="/Moved.md")
    assert paths(search_query(query="garden", folder_ids=None)) == ["Renamed/Moved.md"]

    # A write committed by another connection (another thread here; another process alike).
    def elsewhere() -> None:
        try:
            Folder.objects.filter(name="Renamed").update(name="Elsewhere")
        finally:
            connection.close()

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert paths(search_query(query="garden", folder_ids=None)) == ["Elsewhere/Moved.md"]


def test_nothing_is_kept_inside_a_transaction_that_may_roll_back(ran: list[str]) -> None:
    vault = Vault()
    vault.add("Lens/One.md", "garden path")
    assert paths(search_query(query="garden", folder_ids=None)) == ["Lens/One.md"]
    with pytest.raises(RuntimeError), transaction.atomic():
        vault.add("Lens/Two.md", "garden gate")
        assert len(paths(search_query(query="garden", folder_ids=None))) == 2
        raise RuntimeError("roll back")
    # total_changes() moved during the rolled-back writes and stays moved: nothing kept from inside.
    assert paths(search_query(query="garden", folder_ids=None)) == ["Lens/One.md"]


def test_writes_no_answer_depends_on_keep_the_answers(ran: list[str]) -> None:
    vault = Vault()
    one = vault.add("Lens/One.md", "garden path")
    assert paths(search_query(query="garden", folder_ids=None)) == ["Lens/One.md"]
    # What a live edit commits many times a second: its update logged, the document's modified time.
    YUpdate.objects.create(doc_id=one, data=b"\x00")
    Document.objects.filter(doc_id=one).update(modified=timezone.now())
    document = Document.objects.get(doc_id=one)
    document.save()  # every column written, none changed

    def elsewhere() -> None:
        try:
            YUpdate.objects.create(doc_id=one, data=b"\x01")
        finally:
            connection.close()

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert paths(search_query(query="garden", folder_ids=None)) == ["Lens/One.md"]
    assert len(ran) == 1
    # A folder gets a document elsewhere: a new row, so the next search asks again.
    vault.add("Other/Two.md", "nothing searched")
    assert paths(search_query(query="garden", folder_ids=None)) == ["Lens/One.md"]
    assert len(ran) == 2


def test_every_trigger_of_the_generation_survives_the_migrations() -> None:
    # Django's SQLite schema editor rebuilds a table to alter it, which drops the table's triggers: a
    # later migration of documents or folders must create them again (see migrations 0010 and 0011).
    with connection.cursor() as cursor:
        cursor.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
        triggers = cursor.fetchall()
    tables = ("lensrelay_search_doc", "lensrelay_document", "lensrelay_folder")
    expected = {
        (table, f"lensrelay_search_generation_{table}_{event}")
        for table in tables
        for event in ("insert", "delete", "update")
    }
    titles = "lensrelay_search_title"
    expected |= {("lensrelay_search_doc", f"{titles}_{event}") for event in ("insert", "delete", "update")}
    assert expected <= set(triggers)


def test_every_generation_trigger_survives_the_later_migrations() -> None:
    """SQLite rebuilds a table to add a unique column (migration 0012 on folders), dropping its triggers;
    a kept answer depends on every one of them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master"
            " WHERE type = 'trigger' AND name LIKE 'lensrelay_search_generation_%'"
        )
        names = {row[0] for row in cursor.fetchall()}
    expected = {
        f"lensrelay_search_generation_{table}_{event}"
        for table in ("lensrelay_search_doc", "lensrelay_document", "lensrelay_folder")
        for event in ("insert", "delete", "update")
    }
    assert names == expected
