"""The search service against the configured database (SQLite by default, PostgreSQL in the scaled run)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection

from lensrelay.models import Document, Folder
from lensrelay.search.index import (
    WRITE_CHUNK,
    search_clear,
    search_index_document,
    search_index_documents,
    search_indexed,
    search_query,
    search_remove_document,
)
from lensrelay.search.query import QueryError
from lensrelay.search.rows import IndexedDocument, document_title
from tests.lensrelay.search.test_query import HOSTILE, _random_queries

pytestmark = pytest.mark.django_db


class Vault:
    """Folders and documents as rows, indexed directly (no document store involved)."""

    def __init__(self) -> None:
        search_clear()
        self.folders: dict[str, Folder] = {}

    def folder(self, name: str) -> Folder:
        if name not in self.folders:
            self.folders[name] = Folder.objects.create(name=name)
        return self.folders[name]

    def add(self, user_path: str, text: str) -> str:
        folder_name, _, rest = user_path.partition("/")
        folder = self.folder(folder_name)
        doc_uuid = str(uuid.uuid4())
        doc_id = f"{folder.doc_id[:36]}-{doc_uuid}"
        path = "/" + rest
        Document.objects.create(folder=folder, uuid=doc_uuid, doc_id=doc_id, path=path)
        search_index_document(
            doc_id=doc_id, title=document_title(path), folder_id=folder.pk, path=path, text=text
        )
        return doc_id


@pytest.fixture
def vault() -> Vault:
    return Vault()


def paths(hits: list[Any]) -> list[str]:
    return [hit.user_path for hit in hits]


def test_hits_carry_title_path_folder_and_a_highlighted_snippet(vault: Vault) -> None:
    doc_id = vault.add(
        "Lens/Biology/Chloroplast.md", "The organelle where photosynthesis happens.\nIt is green."
    )
    vault.add("Lens/Other.md", "Nothing to see here.")
    [hit] = search_query(query="photosynthesis", folder_ids=None)
    assert (hit.doc_id, hit.folder, hit.path, hit.title) == (
        doc_id,
        "Lens",
        "/Biology/Chloroplast.md",
        "Chloroplast",
    )
    assert hit.user_path == "Lens/Biology/Chloroplast.md"
    assert "**photosynthesis**" in hit.snippet and "\n" not in hit.snippet
    assert hit.score > 0


def test_a_title_match_outranks_body_matches(vault: Vault) -> None:
    vault.add("Lens/A Body.md", "mitochondria mitochondria and more about the mitochondria here")
    vault.add("Lens/Mitochondria.md", "The powerhouse of the cell, a small organelle with its own genome.")
    vault.add("Lens/Z Body.md", "one mention of mitochondria in a longer text about other cell parts")
    assert paths(search_query(query="mitochondria", folder_ids=None))[0] == "Lens/Mitochondria.md"


def test_ties_are_ordered_by_folder_then_path(vault: Vault) -> None:
    for user_path in ["Zeta/b.md", "Alpha/b.md", "Alpha/a.md", "Alpha/Sub/a.md"]:
        vault.add(user_path, "identical text about ribosomes")
    expected = ["Alpha/Sub/a.md", "Alpha/a.md", "Alpha/b.md", "Zeta/b.md"]
    assert paths(search_query(query="ribosomes", folder_ids=None)) == expected
    assert paths(search_query(query="ribosomes", folder_ids=None, limit=2)) == expected[:2]


def test_folder_ids_and_path_prefix_scope_the_search(vault: Vault) -> None:
    vault.add("Lens/Notes/One.md", "enzyme kinetics")
    vault.add("Lens/Notes Old/Two.md", "enzyme history")
    vault.add("Lens/Three.md", "enzyme basics")
    vault.add("Private/Four.md", "enzyme secrets")
    lens, private = vault.folders["Lens"].pk, vault.folders["Private"].pk
    assert len(search_query(query="enzyme", folder_ids=None)) == 4
    assert "Private/Four.md" not in paths(search_query(query="enzyme", folder_ids={lens}))
    assert paths(search_query(query="enzyme", folder_ids={private})) == ["Private/Four.md"]
    assert search_query(query="enzyme", folder_ids=set()) == []
    assert paths(search_query(query="enzyme", folder_ids={lens}, path_prefix="/Notes/")) == [
        "Lens/Notes/One.md"
    ]
    assert search_query(query="secrets", folder_ids={lens}) == []


def test_phrases_prefixes_alternatives_and_exclusions(vault: Vault) -> None:
    vault.add("L/Theory.md", "the cell theory of life")
    vault.add("L/Reversed.md", "theory about a cell wall")
    vault.add("L/Photo.md", "photosynthesis in leaves")
    assert paths(search_query(query='"cell theory"', folder_ids=None)) == ["L/Theory.md"]
    assert sorted(paths(search_query(query="cell theory", folder_ids=None))) == [
        "L/Reversed.md",
        "L/Theory.md",
    ]
    assert paths(search_query(query="photo*", folder_ids=None)) == ["L/Photo.md"]
    assert sorted(paths(search_query(query="leaves OR wall", folder_ids=None))) == [
        "L/Photo.md",
        "L/Reversed.md",
    ]
    assert paths(search_query(query="cell -wall", folder_ids=None)) == ["L/Theory.md"]


def test_search_ignores_case_everywhere_and_accents_on_sqlite(vault: Vault) -> None:
    vault.add("L/Über Photosynthese.md", "Pflanzen wandeln LICHTENERGIE um; café")
    assert len(search_query(query="lichtenergie", folder_ids=None)) == 1
    assert len(search_query(query="über", folder_ids=None)) == 1
    folded = search_query(query="uber cafe", folder_ids=None)
    # FTS5's unicode61 folds diacritics; PostgreSQL's 'simple' configuration does not.
    assert len(folded) == (1 if connection.vendor == "sqlite" else 0)


def test_reindexing_replaces_and_removing_forgets(vault: Vault) -> None:
    doc_id = vault.add("L/Note.md", "first version mentions glycolysis")
    folder = vault.folders["L"]
    search_index_document(
        doc_id=doc_id, title="Note", folder_id=folder.pk, path="/Note.md", text="now krebs cycle"
    )
    assert search_query(query="glycolysis", folder_ids=None) == []
    assert paths(search_query(query="krebs", folder_ids=None)) == ["L/Note.md"]
    assert set(search_indexed(folder_id=folder.pk)) == {doc_id}
    search_remove_document(doc_id=doc_id)
    assert search_query(query="krebs", folder_ids=None) == []
    assert search_indexed(folder_id=folder.pk) == {}


def test_entries_whose_document_row_is_gone_are_never_returned(vault: Vault) -> None:
    doc_id = vault.add("L/Gone.md", "stale lysosome text")
    Document.objects.filter(doc_id=doc_id).delete()
    assert search_query(query="lysosome", folder_ids=None) == []


def test_snippet_is_about_thirty_words_around_the_best_match(vault: Vault) -> None:
    words = [f"filler{i}" for i in range(400)]
    words[250] = "centrosome"
    vault.add("L/Long.md", " ".join(words))
    [hit] = search_query(query="centrosome", folder_ids=None)
    assert "**centrosome**" in hit.snippet
    assert "filler0 " not in hit.snippet and "filler399" not in hit.snippet
    assert 15 <= len(hit.snippet.split()) <= 40
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")


def test_adjacent_matches_on_a_line_are_one_bold_run(vault: Vault) -> None:
    vault.add("L/Cells.md", "Read about cell theory today.")
    [hit] = search_query(query='"cell theory"', folder_ids=None)
    assert "**cell theory**" in hit.snippet


def test_frontmatter_is_searchable_but_snippets_come_from_the_body(vault: Vault) -> None:
    vault.add(
        "L/Tagged.md",
        "---\ntags: [organelles]\nstatus: draft\n---\n# Vacuole\nStores water in plant cells.\n",
    )
    [hit] = search_query(query="organelles", folder_ids=None)
    assert hit.path == "/Tagged.md"
    assert "tags" not in hit.snippet and "Vacuole" in hit.snippet


def test_text_the_database_could_choke_on_is_stored(vault: Vault) -> None:
    vault.add("L/Odd.md", "nul\x00byte and \ue000marker\ue001 chars and **bold** peroxisome")
    [hit] = search_query(query="peroxisome", folder_ids=None)
    assert "\x00" not in hit.snippet and "\ue000" not in hit.snippet
    assert "**peroxisome**" in hit.snippet


def test_no_query_raises_anything_but_query_error(vault: Vault) -> None:
    vault.add("L/Cell.md", "ab cell ü 光 text")
    answered = 0
    for text in HOSTILE + _random_queries(300):
        try:
            search_query(query=text, folder_ids=None)
        except QueryError:
            continue
        answered += 1
    assert answered > 100


def test_document_title_drops_the_markdown_suffix() -> None:
    assert document_title("/Notes/Cell Theory.md") == "Cell Theory"
    assert document_title("/A.Markdown") == "A"
    assert document_title("/.md") == ".md"
    assert document_title("/data.canvas") == "data.canvas"


def test_an_unscoped_search_ranks_like_a_scoped_one_past_ties_and_gone_rows(vault: Vault) -> None:
    # Unscoped searches rank inside the index alone, then join: same order and count as the scoped query,
    # with more ties than the page (fewer than the wider inner page) and entries whose row is gone at the top.
    for i in reversed(range(40)):  # indexed in the reverse of path order
        vault.add(f"{'AB'[i % 2]}/Tie {i:02d}.md", "identical text about ribosomes")
    for i in range(5):
        gone = vault.add(f"A/Gone {i}.md", "ribosomes")  # shorter: ranks above every tie
        Document.objects.filter(doc_id=gone).delete()
    every = set(vault.folders[name].pk for name in "AB")
    for limit in (3, 7, 20, 100):
        unscoped = paths(search_query(query="ribosomes", folder_ids=None, limit=limit))
        assert unscoped == paths(search_query(query="ribosomes", folder_ids=every, limit=limit))
        assert len(unscoped) == min(limit, 40) and not any("Gone" in p for p in unscoped)
    assert paths(search_query(query="ribosomes", folder_ids=None, limit=3)) == [
        "A/Tie 00.md",
        "A/Tie 02.md",
        "A/Tie 04.md",
    ]


def test_every_title_match_outranks_every_body_only_match(vault: Vault) -> None:
    # Under bm25 alone a short note saying the word forty times beat a long note with it in the title.
    # Among title matches, the closer title comes first, whatever the length of the note.
    vault.add("Lens/Repeats.md", " ".join(["mitochondria"] * 40))
    filler = " ".join(f"word{i}" for i in range(300))
    vault.add("Lens/Mitochondria Notes.md", filler)
    vault.add("Lens/Mitochondria.md", filler + " " + filler)
    hits = search_query(query="mitochondria", folder_ids=None)
    assert paths(hits) == ["Lens/Mitochondria.md", "Lens/Mitochondria Notes.md", "Lens/Repeats.md"]
    # A query of several words: a note with any of them in its title comes first, and it must still
    # hold every word somewhere.
    vault.add("Lens/Cell.md", "no other searched word here")
    vault.add("Lens/Cell Biology.md", "one mitochondria")
    vault.add("Lens/Biology.md", "the cell and mitochondria " * 20)
    assert paths(search_query(query="cell mitochondria", folder_ids=None)) == [
        "Lens/Cell Biology.md",
        "Lens/Biology.md",
    ]


@pytest.mark.parametrize("scope", ["all", "folders", "prefix"])
def test_every_page_is_the_start_of_a_longer_one_across_the_title_tier(vault: Vault, scope: str) -> None:
    # Title matches and body-only matches of the same word, more of each than the smaller pages hold.
    for i in range(12):
        vault.add(f"{'AB'[i % 2]}/Notes/Ribosomes {i:02d}.md", "ribosomes " * (1 + i % 4))
        vault.add(f"{'AB'[i % 2]}/Notes/Other {i:02d}.md", "ribosomes " * (1 + i % 5) + "and more")
    folder_ids = None if scope == "all" else {vault.folders[name].pk for name in "AB"}
    prefix = "/Notes/" if scope == "prefix" else None
    every = paths(search_query(query="ribosomes", folder_ids=folder_ids, path_prefix=prefix, limit=100))
    assert len(every) == 24 and all("Ribosomes" in p for p in every[:12])
    for limit in (1, 5, 12, 13, 20):
        page = search_query(query="ribosomes", folder_ids=folder_ids, path_prefix=prefix, limit=limit)
        assert paths(page) == every[:limit]


def test_the_title_tier_follows_renames_reindexing_and_removal(vault: Vault) -> None:
    folder = vault.folder("Lens")
    doc_id = vault.add("Lens/Kinase.md", "an enzyme")
    assert paths(search_query(query="kinase", folder_ids=None)) == ["Lens/Kinase.md"]
    Document.objects.filter(doc_id=doc_id).update(path="/Ligase.md")
    search_index_document(
        doc_id=doc_id, title="Ligase", folder_id=folder.pk, path="/Ligase.md", text="an enzyme"
    )
    assert search_query(query="kinase", folder_ids=None) == []
    assert paths(search_query(query="ligase enzyme", folder_ids=None)) == ["Lens/Ligase.md"]
    search_remove_document(doc_id=doc_id)
    assert search_query(query="ligase", folder_ids=None) == []
    vault.add("Lens/Ligase 2.md", "another enzyme")
    assert paths(search_query(query="ligase", folder_ids=None)) == ["Lens/Ligase 2.md"]
    search_clear()
    assert search_query(query="ligase", folder_ids=None) == []


@pytest.mark.parametrize("query", ["ribosomes", "ribosomes text"])
def test_the_title_tier_ranks_unscoped_like_scoped_past_ties_and_gone_rows(vault: Vault, query: str) -> None:
    for i in reversed(range(40)):  # indexed in the reverse of path order; the same title length
        vault.add(f"{'AB'[i % 2]}/Ribosomes {i:02d}.md", "identical text")
    for i in range(5):
        gone = vault.add(f"A/Sub {i}/Ribosomes.md", "text")  # a shorter title: ranks above every tie
        Document.objects.filter(doc_id=gone).delete()
    vault.add("A/Ribosomes Without.md", "no second word")  # in the title tier of "ribosomes" alone
    every = set(vault.folders[name].pk for name in "AB")
    for limit in (3, 7, 20, 100):
        unscoped = paths(search_query(query=query, folder_ids=None, limit=limit))
        assert unscoped == paths(search_query(query=query, folder_ids=every, limit=limit))
        assert len(unscoped) == min(limit, 40 if " " in query else 41)
        assert not any("Sub" in p for p in unscoped)
    assert paths(search_query(query=query, folder_ids=None, limit=3)) == [
        "A/Ribosomes 00.md",
        "A/Ribosomes 02.md",
        "A/Ribosomes 04.md",
    ]


def test_a_long_batch_is_written_a_few_documents_to_a_transaction_each_worked_out_before(
    vault: Vault,
) -> None:
    """The derive process writes the search rows of every note a pass saw change (150 at a team's load).
    In one transaction they held SQLite's write lock, which the server's update log appends wait for, for
    15-23 ms (issue 36); nothing that can be done before the lock is done under it."""
    folder = vault.folder("L")
    documents = []
    for n in range(2 * WRITE_CHUNK + 5):
        doc_uuid = str(uuid.uuid4())
        doc_id = f"{folder.doc_id[:36]}-{doc_uuid}"
        Document.objects.create(folder=folder, uuid=doc_uuid, doc_id=doc_id, path=f"/Batch {n}.md")
        text = f"---\ntags: [batch]\n---\nbatch note {n} about mitochondria"
        documents.append(
            IndexedDocument(
                doc_id=doc_id, folder_id=folder.pk, path=f"/Batch {n}.md", title=f"Batch {n}", text=text
            )
        )
    opened: list[bool] = []  # per transaction (a savepoint inside the test's): every document's parts ready

    def record(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if sql.startswith("SAVEPOINT"):
            opened.append(all("parts" in vars(document) for document in documents))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        search_index_documents(documents)
    assert opened == [True, True, True]
    assert len(search_query(query="mitochondria", folder_ids={folder.pk}, limit=100)) == len(documents)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's FTS5 table only")
def test_sqlite_writes_every_document_row_before_any_fts_row(vault: Vault) -> None:
    """A statement that fires triggers (the document rows have them) makes FTS5 write out the terms it
    holds for the transaction: alternating the two tables wrote the FTS index once per document, a third
    more CPU per note for the derive process (issue 36). A batch of replaced, new and repeated notes."""
    folder = vault.folder("L")
    replaced = [vault.add(f"L/Old {n}.md", f"old text {n} about enzymes") for n in range(3)]
    fresh = []
    for n in range(2):
        doc_uuid = str(uuid.uuid4())
        fresh.append(f"{folder.doc_id[:36]}-{doc_uuid}")
        Document.objects.create(folder=folder, uuid=doc_uuid, doc_id=fresh[-1], path=f"/New {n}.md")

    def note(doc_id: str, path: str, text: str) -> IndexedDocument:
        return IndexedDocument(
            doc_id=doc_id, folder_id=folder.pk, path=path, title=document_title(path), text=text
        )

    batch = [note(doc_id, f"/Old {n}.md", f"now about ribosomes {n}") for n, doc_id in enumerate(replaced)]
    batch += [note(doc_id, f"/New {n}.md", f"new note on ribosomes {n}") for n, doc_id in enumerate(fresh)]
    batch.append(note(replaced[0], "/Old 0.md", "the last word on chloroplasts"))  # the last one wins
    tables: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if sql.startswith(("UPDATE", "INSERT")):
            tables.append("fts" if "lensrelay_search_fts" in sql else "rows")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        search_index_documents(batch)
    assert tables == sorted(tables, key=lambda table: table == "fts"), tables
    assert "rows" in tables and "fts" in tables
    assert sorted(paths(search_query(query="ribosomes", folder_ids=None))) == [
        "L/New 0.md",
        "L/New 1.md",
        "L/Old 1.md",
        "L/Old 2.md",
    ]
    assert paths(search_query(query="chloroplasts", folder_ids=None)) == ["L/Old 0.md"]
    assert search_query(query="enzymes", folder_ids=None) == []
    assert set(search_indexed(folder_id=folder.pk)) == {*replaced, *fresh}
