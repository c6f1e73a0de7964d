"""The `search` tool: output shape, scopes, token folders, bad queries and live updates."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pycrdt import Text

from lensrelay.docstore.offsets import text_insert
from lensrelay.documents import document_create
from lensrelay.folders import folder_create
from lensrelay.models import Folder
from lensrelay.texts import CONTENTS
from mcp_tools.registry import REGISTRY
from tests.lensrelay.search.helpers import eventually, hook_folder_mirroring
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_tools.tools.search  # noqa: F401  (registers the tool until the package imports it)

    hook_folder_mirroring(monkeypatch)


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
