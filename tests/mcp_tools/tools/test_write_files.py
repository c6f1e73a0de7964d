"""New HTML, JSON and canvas files written by assistants: a pending `create` row, the file made on accept
(live text for HTML, a blob for JSON and canvases, Relay's type for the extension), nothing on reject."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.files.kinds import stored_as_text
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from mcp_tools.kb import open_kb
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.filetext import file_content
from suggestions.models import Suggestion
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)

HTML = "<p>Light {++reactions++} <b>board</b></p>\n"  # CriticMarkup-looking text is plain text in HTML
JSON = '{\n  "name": "lens",\n  "nodes": []\n}\n'


@pytest.fixture
async def folders(store: Any, make_folder: Any) -> Any:
    lens = await sync_to_async(make_folder)("Lens")
    other = await sync_to_async(make_folder)("Other")
    await document_create(store=store, folder=lens, path="/Note.md", text="x\n")
    return lens, other


async def rows() -> list[Suggestion]:
    return await sync_to_async(lambda: list(Suggestion.objects.order_by("created")))()


async def entry(store: Any, user_path: str) -> Any:
    kb = await open_kb()
    await path_index(store).ensure()
    return kb.index.resolve(access(), user_path)


@pytest.mark.parametrize(
    "path,content,kind",
    [
        ("Lens/Pages/page.html", HTML, "file"),
        ("Lens/data.json", JSON, "file"),
        ("Lens/b.canvas", JSON, "canvas"),
    ],
)
async def test_accepting_creates_the_file(
    store: Any, folders: Any, call: Any, path: str, content: str, kind: str
) -> None:
    text, error = await call("write", {"file_path": path, "content": content})
    assert not error, text
    assert "created when a reviewer accepts" in text
    assert await entry(store, path) is None  # nothing exists while pending
    [row] = await rows()
    listed, error = await call("list_suggestions", {})
    assert not error and row.uid in listed and path in listed
    assert (row.kind, row.status, row.path, row.new_text) == ("create", "pending", path, content)
    assert (await suggestion_decide(store=store, suggestion=row, user=None, accept=True)).ok
    made = await entry(store, path)
    assert made is not None and made.type == kind
    stored = await file_content(store, made)
    assert stored.text == content
    assert bool(stored.hash) != stored_as_text(path)  # HTML is live text, JSON a blob
    read, error = await call("read", {"file_path": path})
    assert not error and ("<b>board</b>" if path.endswith(".html") else '"name": "lens"') in read
    await sync_to_async(row.refresh_from_db)()
    assert row.status == "accepted" and row.doc_id == made.doc_id


async def test_rejecting_leaves_nothing(store: Any, folders: Any, call: Any) -> None:
    _, error = await call("write", {"file_path": "Lens/page.html", "content": HTML})
    assert not error
    [row] = await rows()
    assert (await suggestion_decide(store=store, suggestion=row, user=None, accept=False)).ok
    assert await entry(store, "Lens/page.html") is None
    listed, _ = await call("glob", {"pattern": "**/*.html"})
    assert "page.html" not in listed


async def test_a_path_taken_before_accepting_keeps_it_pending(store: Any, folders: Any, call: Any) -> None:
    _, error = await call("write", {"file_path": "Lens/page.html", "content": HTML})
    assert not error
    _, error = await call("write", {"file_path": "Lens/page.html", "content": "<p>second</p>"})
    assert not error  # both pending: the first accepted wins
    first, second = await rows()
    assert (await suggestion_decide(store=store, suggestion=first, user=None, accept=True)).ok
    decision = await suggestion_decide(store=store, suggestion=second, user=None, accept=True)
    assert not decision.ok and "already exists" in decision.reason
    await sync_to_async(second.refresh_from_db)()
    assert second.status == "pending"


@pytest.mark.parametrize(
    "path,content,who,expected",
    [
        ("Lens/bad.json", '{"a": 1,}', None, "line 1 column 9"),
        ("Lens/bad.canvas", "{nodes: []}", None, "not be valid JSON"),
        ("Lens/ok.json", JSON, access("view"), "role view"),
        ("Lens/../Other/x.json", JSON, None, "Error"),
        ("Lens/a?.json", JSON, None, "Windows"),
        ("Lens/trail.html ", HTML, None, "Windows"),
        ("Lens/Note.md", "x", None, "read"),
        ("Lens/pic.png", "x", None, "write creates only"),
    ],
)
async def test_refused_with_nothing_recorded(
    store: Any, folders: Any, call: Any, path: str, content: str, who: Any, expected: str
) -> None:
    text, error = await call("write", {"file_path": path, "content": content}, who=who)
    assert error and expected in text, text
    assert await rows() == []


async def test_another_folders_token_cannot_create_here(store: Any, folders: Any, call: Any) -> None:
    _, other = folders
    text, error = await call(
        "write", {"file_path": "Lens/x.json", "content": JSON}, who=access("suggest", frozenset({other.pk}))
    )
    assert error and "Folder not found: Lens" in text
    assert await rows() == []
