"""Documents as MCP resources: URIs, paging, reading the accepted view, scope."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.models import Folder
from lensrelay.vault.documents import document_create
from lensrelay.vault.importexport import import_vault
from mcp_tools.registry import ToolContext
from mcp_tools.resources import providers
from mcp_tools.resources.documents import (
    DOCUMENTS,
    MIME_TYPE,
    DocumentResources,
    document_uri,
    path_of_uri,
)
from mcp_tools.resources.providers import InvalidCursor
from tests.mcp_tools.tools.conftest import DEMO, access

DEMO_PATHS = 14
with_db = pytest.mark.django_db(transaction=True)


def ctx(folder_ids: frozenset[int] | None = None) -> ToolContext:
    return ToolContext(access=access("view", folder_ids), session_key="resources-test")


@pytest.fixture
async def demo(store: Any, transactional_db: None) -> Any:
    await import_vault(store=store, root=DEMO, folder_name="Lens")
    return store


async def folder_id(name: str) -> int:
    folder = await sync_to_async(Folder.objects.get)(name=name)
    return int(folder.pk)


async def every_page(provider: DocumentResources, context: ToolContext) -> list[list[dict[str, Any]]]:
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        items, cursor = await provider.list(context, cursor)
        pages.append(items)
        if cursor is None:
            return pages


# ------------------------------------------------------------------------------------------ URIs (no db)


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("Lens/Notes/Ideas.md", "lens://Lens/Notes/Ideas.md"),
        ("Lens/Über Photosynthese.md", "lens://Lens/%C3%9Cber%20Photosynthese.md"),
        ("Lens Edu/a#b?c%d.md", "lens://Lens%20Edu/a%23b%3Fc%25d.md"),
        ("Lens/光合作用.md", "lens://Lens/%E5%85%89%E5%90%88%E4%BD%9C%E7%94%A8.md"),
    ],
)
def test_uris_encode_each_segment_and_round_trip(path: str, uri: str) -> None:
    assert document_uri(path) == uri
    assert path_of_uri(uri) == path


def test_template_style_encoded_slashes_name_the_same_path() -> None:
    assert path_of_uri("lens://Lens%2FNotes%2FIdeas.md") == "Lens/Notes/Ideas.md"


@pytest.mark.parametrize("uri", ["file:///etc/passwd", "lens://", "lens://Lens/%FF.md", "test://static-text"])
def test_foreign_or_undecodable_uris_are_not_ours(uri: str) -> None:
    assert path_of_uri(uri) is None


def test_the_template_names_the_scheme() -> None:
    [template] = DOCUMENTS.templates()
    assert template["uriTemplate"] == "lens://{path}"
    assert template["mimeType"] == MIME_TYPE and template["name"]


async def test_a_garbage_cursor_is_refused() -> None:
    with pytest.raises(InvalidCursor):
        await DOCUMENTS.list(ctx(), "not-a-cursor")


# ------------------------------------------------------------------------------------------ with the demo


@with_db
async def test_list_pages_through_every_document_in_path_order(demo: Any) -> None:
    pages = await every_page(DocumentResources(page_size=5), ctx())
    assert [len(page) for page in pages] == [5, 5, 4]
    items = [item for page in pages for item in page]
    names = [item["name"] for item in items]
    assert names == sorted(names) and len(set(names)) == DEMO_PATHS
    ideas = next(item for item in items if item["name"] == "Lens/Notes/Ideas.md")
    assert ideas["uri"] == "lens://Lens/Notes/Ideas.md"
    assert ideas["title"] == "Ideas" and ideas["mimeType"] == "text/markdown"
    assert ideas["size"] > 0
    assert "lens://Lens/%C3%9Cber%20Photosynthese.md" in {item["uri"] for item in items}


@with_db
async def test_one_default_page_holds_the_demo(demo: Any) -> None:
    items, cursor = await DOCUMENTS.list(ctx(), None)
    assert cursor is None and len(items) == DEMO_PATHS


@with_db
async def test_a_cursor_survives_a_document_added_between_pages(demo: Any) -> None:
    provider = DocumentResources(page_size=3)
    first, cursor = await provider.list(ctx(), None)
    lens = await sync_to_async(Folder.objects.get)(name="Lens")
    await document_create(store=demo, folder=lens, path="/AAA First.md", text="early\n")
    rest: list[dict[str, Any]] = []
    while cursor is not None:
        page, cursor = await provider.list(ctx(), cursor)
        rest += page
    names = [item["name"] for item in first + rest]
    assert len(names) == len(set(names)) == DEMO_PATHS  # the new one sorts before the cursor: not seen


@with_db
async def test_read_gives_the_text_read_shows_without_line_numbers(demo: Any) -> None:
    from mcp_tools.tools.read import ReadArgs, read

    for path in ["Lens/Notes/Ideas.md", "Lens/Über Photosynthese.md"]:
        uri = document_uri(path)
        contents = await DOCUMENTS.read(ctx(), uri)
        assert contents is not None
        [content] = contents
        assert content["uri"] == uri and content["mimeType"] == "text/markdown"
        numbered = await read(ctx(), ReadArgs(file_path=path))
        shown = [line.split("\t", 1)[1] for line in numbered.splitlines()]
        assert content["text"].splitlines() == shown


@with_db
async def test_read_shows_the_accepted_view_and_size_matches(demo: Any) -> None:
    lens = await sync_to_async(Folder.objects.get)(name="Lens")
    await document_create(store=demo, folder=lens, path="/Pending.md", text="keep {--old--}{++new++} end\n")
    contents = await DOCUMENTS.read(ctx(), "lens://Lens/Pending.md")
    assert contents is not None and contents[0]["text"] == "keep new end\n"
    items, _ = await DOCUMENTS.list(ctx(), None)
    listed = next(item for item in items if item["name"] == "Lens/Pending.md")
    assert listed["size"] == len(b"keep new end\n")


@with_db
async def test_missing_and_traversal_uris_read_as_nothing(demo: Any) -> None:
    for uri in [
        "lens://Lens/Nope.md",
        "lens://../Lens/Welcome.md",
        "lens://Lens/../Lens/Welcome.md",
        "lens://%2e%2e/Lens/Welcome.md",
        "lens:///etc/passwd",
        "lens://Lens/Welcome.md%00",
        "lens://Lens/Notes",  # a sub-folder, not a document
    ]:
        assert await DOCUMENTS.read(ctx(), uri) is None, uri


@with_db
async def test_a_scoped_token_sees_only_its_folders(demo: Any, tmp_path: Path) -> None:
    vault = tmp_path / "private"
    vault.mkdir()
    (vault / "Secret.md").write_text("zebracorn\n")
    await import_vault(store=demo, root=vault, folder_name="Private")
    lens, private = await folder_id("Lens"), await folder_id("Private")

    items, _ = await DOCUMENTS.list(ctx(frozenset({private})), None)
    assert [item["uri"] for item in items] == ["lens://Private/Secret.md"]
    assert await DOCUMENTS.read(ctx(frozenset({private})), "lens://Lens/Welcome.md") is None
    assert await DOCUMENTS.read(ctx(frozenset({lens})), "lens://Private/Secret.md") is None
    everything, _ = await DOCUMENTS.list(ctx(), None)
    assert len(everything) == DEMO_PATHS + 1


@with_db
async def test_the_registry_reads_documents_through_the_provider(demo: Any) -> None:
    assert DOCUMENTS in providers.PROVIDERS
    result = await providers.read_resource(ctx(), "lens://Lens/Welcome.md")
    assert result["contents"][0]["text"] == (DEMO / "Welcome.md").read_text()
    with pytest.raises(providers.ResourceNotFound):
        await providers.read_resource(ctx(), "lens://Lens/Nope.md")
