"""The `search` tool: output shape, scopes, token folders, bad queries and live updates."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from typing import Any

import pytest
from pycrdt import Text

from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.texts import CONTENTS
from lensrelay.models import Document, Folder
from lensrelay.search import maintain
from lensrelay.search.index import search_query, search_remove_document
from lensrelay.search.maintain import search_catch_up, search_ready
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create
from mcp_tools.registry import REGISTRY
from tests.lensrelay.search.helpers import eventually, hook_folder_mirroring
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_tools.tools.search  # noqa: F401  (registers the tool until the package imports it)

    hook_folder_mirroring(monkeypatch)


@pytest.fixture
async def demo(demo: Any) -> Any:
    """The demo vault with the index caught up. Searches no longer wait for the catch-up (tested below),
    and the index tables are not emptied between tests (no model owns them): entries an earlier test
    left, under the demo's same document ids, stay until the catch-up removes them."""
    await search_ready(demo)
    return demo


def headings(text: str) -> list[str]:
    return re.findall(r"^## .*$", text, flags=re.M)


async def test_results_are_ranked_with_titles_paths_and_highlighted_snippets(demo: Any, call: Any) -> None:
    text, error = await call("search", {"query": "chloroplast"})
    assert not error
    lines = text.splitlines()
    found = headings(text)
    assert lines[0] == f"{len(found)} results:" and len(found) >= 3
    assert found[0] == "## Chloroplast (Lens/Chloroplast.md)"
    snippet = lines[lines.index(found[0]) + 1]
    assert "**Chloroplast**" in snippet
    again, _ = await call("search", {"query": "chloroplast"})
    assert again == text  # deterministic


async def test_every_listed_path_reads(demo: Any, call: Any) -> None:
    text, _ = await call("search", {"query": "photo*", "limit": 50})
    for heading in headings(text):
        path = re.fullmatch(r"## .* \((.*)\)", heading).group(1)  # type: ignore[union-attr]
        _, error = await call("read", {"file_path": path, "limit": 1})
        assert not error, path


async def test_limit_and_no_results(demo: Any, call: Any) -> None:
    text, _ = await call("search", {"query": "cell", "limit": 2})
    assert text.startswith("2 results:") and len(headings(text)) == 2
    text, error = await call("search", {"query": "zzzzqqq"})
    assert not error and text == 'No results for "zzzzqqq".'
    text, _ = await call("search", {"query": "zzzzqqq", "path": "Lens/Notes"})
    assert text == 'No results for "zzzzqqq" in Lens/Notes.'


async def test_path_scopes_to_a_folder_sub_folder_or_document(demo: Any, call: Any) -> None:
    text, error = await call("search", {"query": "photosynthesis", "path": "Lens/Notes"})
    assert not error and headings(text)
    assert all("(Lens/Notes/" in h for h in headings(text))
    text, _ = await call("search", {"query": "cell", "path": "Lens/Notes/Archive/"})
    assert headings(text) == ["## Old Syllabus (Lens/Notes/Archive/Old Syllabus.md)"]
    text, _ = await call("search", {"query": "cell", "path": "Lens/Cell Theory.md"})
    assert headings(text) == ["## Cell Theory (Lens/Cell Theory.md)"]
    text, error = await call("search", {"query": "cell", "path": "Nowhere"})
    assert error and text == "Error: Folder not found: Nowhere"


async def test_a_scoped_token_never_sees_other_folders(demo: Any, call: Any) -> None:
    private = await demo.db(folder_create, name="Private")
    await document_create(store=demo, folder=private, path="/Secret.md", text="chloroplast secrets")
    lens_id = await demo.db(lambda: Folder.objects.get(name="Lens").pk)

    everyone, _ = await call("search", {"query": "chloroplast", "limit": 100})
    assert "## Secret (Private/Secret.md)" in headings(everyone)

    lens_only = access(folder_ids=frozenset({lens_id}))
    text, _ = await call("search", {"query": "chloroplast", "limit": 100}, who=lens_only)
    assert headings(text) and not any("Private/" in h for h in headings(text))
    text, _ = await call("search", {"query": "secrets"}, who=lens_only)
    assert text.startswith("No results")
    text, error = await call("search", {"query": "secrets", "path": "Private"}, who=lens_only)
    assert error and text == "Error: Folder not found: Private"  # exactly like a missing folder

    private_only = access(folder_ids=frozenset({private.pk}))
    text, _ = await call("search", {"query": "chloroplast"}, who=private_only)
    assert headings(text) == ["## Secret (Private/Secret.md)"]


async def test_bad_queries_are_helpful_errors(demo: Any, call: Any) -> None:
    for query, expected in [
        ("", "empty"),
        ("   ", "empty"),
        ("-chloroplast", "only excludes"),
        ('"', "no words"),
        ("AND OR NOT", "no words"),
        ("x" * 1001, "too long"),
    ]:
        text, error = await call("search", {"query": query})
        assert error and expected in text, query
    for query in ['"unclosed phrase', "NEAR(a b)", "title:cell", "a) OR (b", "c++ *"]:
        _, error = await call("search", {"query": query})
        assert not error, query


async def test_arguments_are_validated(demo: Any, call: Any) -> None:
    for arguments, message in [
        ({}, "missing required argument 'query'"),
        ({"query": "x", "bogus": 1}, "unknown argument 'bogus'"),
        ({"query": "x", "limit": 0}, "'limit'"),
        ({"query": "x", "limit": 101}, "'limit'"),
        ({"query": 5}, "'query'"),
    ]:
        text, error = await call("search", arguments)
        assert error and message in text, arguments


def test_definition_is_read_only_with_a_closed_schema() -> None:
    import mcp_tools.tools.search  # noqa: F401

    definition = REGISTRY["search"].definition()
    schema = definition["inputSchema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["query"]
    assert set(schema["properties"]) == {"query", "path", "limit"}
    assert definition["annotations"]["readOnlyHint"] is True


async def test_an_edit_shows_up_in_search_within_a_second(demo: Any, call: Any) -> None:
    lens = await demo.db(lambda: Folder.objects.get(name="Lens"))
    doc = await document_create(store=demo, folder=lens, path="/Live.md", text="# Live\n")
    room = await demo.get(doc.doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        text_insert(ytext, current=str(ytext), index=len(str(ytext)), value="A {++plasmodesmata++} note.\n")
    await room.flushed()

    async def found() -> bool:
        text, _ = await call("search", {"query": "plasmodesmata"})
        return headings(text) == ["## Live (Lens/Live.md)"] and "**plasmodesmata**" in text

    assert await eventually(found, within=1.5) < 1.2


async def _forget_one_note(store: Any) -> str:
    """What a process that crashed before indexing leaves: a note the index does not hold; the process
    that starts next has not caught up yet."""
    maintainer = maintain.maintainer_for(store)
    if maintainer._ready is not None:
        await asyncio.shield(maintainer._ready)
    maintainer._ready = None
    doc_id = await store.db(lambda: Document.objects.get(folder__name="Lens", path="/Chloroplast.md").doc_id)
    await store.db(search_remove_document, doc_id=doc_id)
    return doc_id


async def test_the_first_search_answers_without_waiting_for_the_catch_up_which_repairs_later(
    demo: Any, call: Any
) -> None:
    store = demo
    await _forget_one_note(store)
    gate = asyncio.Event()
    search_catch_up(store, after=gate.wait)  # held until the test lets it go
    catching_up = maintain.maintainer_for(store)._ready
    assert catching_up is not None and not catching_up.done()

    text, error = await asyncio.wait_for(call("search", {"query": "chloroplast"}), timeout=10)
    assert not error
    assert "(Lens/Chloroplast.md)" not in text  # answered from the index as it is
    assert not catching_up.done()

    gate.set()
    await search_ready(store)
    text, error = await call("search", {"query": "chloroplast"})
    assert not error and "## Chloroplast (Lens/Chloroplast.md)" in text


async def test_opening_the_knowledge_base_starts_the_catch_up_without_any_search(
    demo: Any, call: Any
) -> None:
    store = demo
    await _forget_one_note(store)
    _, error = await call("glob", {"pattern": "**/*.md"})
    assert not error
    catching_up = maintain.maintainer_for(store)._ready
    assert catching_up is not None
    await asyncio.wait_for(asyncio.shield(catching_up), timeout=30)
    hits = await store.db(search_query, query="chloroplast", folder_ids=None)
    assert "Lens/Chloroplast.md" in [hit.user_path for hit in hits]


async def test_a_failed_catch_up_starts_again_with_the_next_search(
    demo: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = demo
    await _forget_one_note(store)
    original = maintain._stale_apart
    failures = [RuntimeError("database hiccup")]

    def flaky() -> Any:
        if failures:
            raise failures.pop()
        return original()

    monkeypatch.setattr(maintain, "_stale_apart", flaky)
    search_catch_up(store)
    failed = maintain.maintainer_for(store)._ready
    assert failed is not None
    with contextlib.suppress(RuntimeError):
        await asyncio.shield(failed)
    _, error = await call("search", {"query": "chloroplast"})
    assert not error
    again = maintain.maintainer_for(store)._ready
    assert again is not None and again is not failed
    await asyncio.wait_for(asyncio.shield(again), timeout=30)
    text, error = await call("search", {"query": "chloroplast"})
    assert not error and "## Chloroplast (Lens/Chloroplast.md)" in text


async def test_the_catch_up_comparison_does_not_hold_the_store_database_thread(
    demo: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = demo
    await _forget_one_note(store)
    comparing, release = threading.Event(), threading.Event()
    original = maintain.search_stale

    def slow(**kwargs: Any) -> Any:
        comparing.set()
        release.wait(timeout=30)
        return original(**kwargs)

    monkeypatch.setattr(maintain, "search_stale", slow)
    search_catch_up(store)
    assert await asyncio.to_thread(comparing.wait, 10)
    try:
        # The comparison is under way (and stuck): searches and reads still answer.
        text, error = await asyncio.wait_for(call("search", {"query": "chloroplast"}), timeout=10)
        assert not error and "(Lens/Chloroplast.md)" not in text
        _, error = await asyncio.wait_for(call("read", {"file_path": "Lens/Chloroplast.md"}), timeout=10)
        assert not error
    finally:
        release.set()
    await search_ready(store)
    text, error = await call("search", {"query": "chloroplast"})
    assert not error and "## Chloroplast (Lens/Chloroplast.md)" in text
