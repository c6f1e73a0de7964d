"""PostgreSQL-specific behaviour of the search backend. Runs only when DATABASE_URL is PostgreSQL
(the conftest deselects it otherwise); there every test must pass, none is skipped."""

from __future__ import annotations

import pytest
from django.db import connection

from lensrelay.search import postgres
from lensrelay.search.index import backend, search_query
from lensrelay.search.query import parse_query, postgres_expression
from tests.lensrelay.search.test_index import Vault

pytestmark = [pytest.mark.scaled, pytest.mark.django_db]


@pytest.fixture
def vault() -> Vault:
    return Vault()


def test_the_run_is_really_on_postgresql() -> None:
    assert connection.vendor == "postgresql"
    assert backend() is postgres


def test_the_index_is_a_weighted_tsvector_under_gin() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'lensrelay_search'")
        definitions = " ".join(row[0] for row in cursor.fetchall())
        assert "USING gin (document)" in definitions
        cursor.execute(
            "SELECT data_type FROM information_schema.columns "
            "WHERE table_name = 'lensrelay_search' AND column_name = 'document'"
        )
        assert cursor.fetchone() == ("tsvector",)


def test_queries_use_the_gin_index(vault: Vault) -> None:
    for i in range(50):
        vault.add(f"L/Doc {i}.md", f"filler text number {i}")
    vault.add("L/Target.md", "the rare word desmosome")
    expression, params = postgres_expression(parse_query("desmosome"))
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            f"EXPLAIN SELECT doc_id FROM lensrelay_search WHERE document @@ ({expression})", params
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "lensrelay_search_document" in plan


def test_weights_title_a_frontmatter_c_body_b(vault: Vault) -> None:
    doc_id = vault.add("L/Kinase.md", "---\ntags: [enzyme]\n---\nphosphate transfer")
    with connection.cursor() as cursor:
        cursor.execute("SELECT document::text FROM lensrelay_search WHERE doc_id = %s", [doc_id])
        vector = cursor.fetchone()[0]
    assert "'kinase':1A" in vector
    assert "'enzyme':" in vector and "C" in vector.split("'enzyme':")[1].split(" ")[0]
    assert "'phosphate':" in vector and "B" in vector.split("'phosphate':")[1].split(" ")[0]


def test_headline_snippets_mark_cuts_and_matches(vault: Vault) -> None:
    vault.add(
        "L/Long.md",
        " ".join([f"before{i}" for i in range(100)] + ["integrin"] + [f"after{i}" for i in range(100)]),
    )
    vault.add("L/Short.md", "integrin binds")
    long_hit, short_hit = sorted(search_query(query="integrin", folder_ids=None), key=lambda h: h.path)
    assert long_hit.snippet.startswith("… ") and long_hit.snippet.endswith(" …")
    assert "**integrin**" in long_hit.snippet
    assert short_hit.snippet == "**integrin** binds"


def test_prefix_phrase_prefix_and_exclusion(vault: Vault) -> None:
    vault.add("L/A.md", "e-mail about microtubules")
    vault.add("L/B.md", "microtubule organising centre")
    assert {h.path for h in search_query(query="microtub*", folder_ids=None)} == {"/A.md", "/B.md"}
    assert [h.path for h in search_query(query='"microtubule organ"*', folder_ids=None)] == ["/B.md"]
    assert [h.path for h in search_query(query="e-mail", folder_ids=None)] == ["/A.md"]
    assert [h.path for h in search_query(query="microtub* -centre", folder_ids=None)] == ["/A.md"]


def test_very_long_documents_index_without_overflowing_a_tsvector(vault: Vault) -> None:
    words = " ".join(f"w{i}x" for i in range(150_000))  # ~1.2 MB of distinct words
    vault.add("L/Huge.md", "needle " + words)
    assert [h.path for h in search_query(query="needle", folder_ids=None)] == ["/Huge.md"]


def test_a_batch_is_one_statement_bound_on_the_server_the_last_of_a_document_winning() -> None:
    from django.test.utils import CaptureQueriesContext

    from lensrelay.search.index import search_index_documents
    from lensrelay.search.rows import IndexedDocument

    hostile = "quote ' backslash \\ percent %s brace {1} dollar $$ semicolon; DROP TABLE lensrelay_search;--"
    documents = [
        IndexedDocument(doc_id="d-1", folder_id=7, path="/A.md", title="A", text="first draft", modified=1.5),
        IndexedDocument(doc_id="d-2", folder_id=7, path="/B.md", title="B", text=hostile, modified=2.25),
        IndexedDocument(
            doc_id="d-1",
            folder_id=8,
            path="/A2.md",
            title="A2",
            text="---\ntags: [x]\n---\nsecond",
            modified=3,
        ),
    ]
    with CaptureQueriesContext(connection) as queries:
        search_index_documents(documents)
    # Django's own cursors saw no statement: the texts were never quoted into SQL on the client.
    assert not [q for q in queries.captured_queries if "lensrelay_search" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT doc_id, folder_id, path, title, body, modified FROM lensrelay_search ORDER BY doc_id"
        )
        rows = cursor.fetchall()
        title, meta, body = documents[2].parts
        cursor.execute(
            "SELECT document = setweight(to_tsvector('simple', %s), 'A')"
            " || setweight(to_tsvector('simple', %s), 'C') || setweight(to_tsvector('simple', %s), 'B')"
            " FROM lensrelay_search WHERE doc_id = 'd-1'",
            [title, meta, body],
        )
        same_vector = cursor.fetchone()[0]
    assert rows == [("d-1", 8, "/A2.md", "A2", "second", 3.0), ("d-2", 7, "/B.md", "B", hostile, 2.25)]
    assert meta and same_vector  # the frontmatter weighs C, as before
    assert matching("semicolon") == ["d-2"]
    # A second batch replaces rows in place.
    search_index_documents([IndexedDocument(doc_id="d-2", folder_id=7, path="/B.md", title="B", text="calm")])
    assert matching("semicolon") == []
    assert matching("calm") == ["d-2"]


def matching(word: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT doc_id FROM lensrelay_search WHERE document @@ to_tsquery('simple', %s) ORDER BY doc_id",
            [word],
        )
        return [row[0] for row in cursor.fetchall()]
