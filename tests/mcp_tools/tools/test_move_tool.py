"""The move tool: documents and sub-folders, within and across folders, proposed as suggestions and carried
out on acceptance with every link still reaching its document (checked with get_links)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.docstore import folderdoc
from lensrelay.docstore.texts import text_cache
from lensrelay.models import Document, Folder
from lensrelay.vault.documents import document_create
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.models import Suggestion
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def folders(store: Any, make_folder: Any) -> tuple[Folder, Folder]:
    lens = await sync_to_async(make_folder)("Lens")
    edu = await sync_to_async(make_folder)("Lens Edu")
    await document_create(store=store, folder=lens, path="/Welcome.md", text="Start at [[Notes/Ideas]].\n")
    await document_create(
        store=store,
        folder=lens,
        path="/Notes/Ideas.md",
        text="Back to [[../Welcome]], then [[../../Lens Edu/Syllabus|the syllabus]].\n",
    )
    await document_create(store=store, folder=edu, path="/Syllabus.md", text="# Syllabus\n")
    return lens, edu


async def rows() -> list[Suggestion]:
    return await sync_to_async(lambda: list(Suggestion.objects.order_by("created")))()


async def accept_only_pending(store: Any) -> str:
    [row] = [r for r in await rows() if r.status == "pending"]
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=True)
    assert decision.ok, decision.reason
    return decision.detail


async def links(call: Any, path: str) -> str:
    text, error = await call("get_links", {"file_path": path})
    assert not error, text
    return text


async def test_a_note_moved_to_the_folder_root_keeps_its_own_links(
    store: Any, folders: Any, call: Any
) -> None:
    text, error = await call("move", {"file_path": "Lens/Notes/Ideas.md", "new_path": "Lens/Ideas.md"})
    assert not error, text
    assert text.startswith("Suggested moving Lens/Notes/Ideas.md -> Lens/Ideas.md for human review")
    assert await accept_only_pending(store) == "3 links rewritten"
    shown = await links(call, "Lens/Ideas.md")
    assert "Unresolved" not in shown
    assert "- Lens/Welcome.md\n" in shown and "- Lens Edu/Syllabus.md" in shown
    assert "Backlinks (documents linking to this):\n- Lens/Welcome.md" in shown
    [ideas] = [e for e in await sync_to_async(list)(Document.objects.filter(path="/Ideas.md"))]
    assert await text_cache(store).get(ideas.doc_id) == (
        "Back to [[./Welcome]], then [[../Lens Edu/Syllabus|the syllabus]].\n"
    )


async def test_a_sub_folder_is_renamed_with_everything_in_it(store: Any, folders: Any, call: Any) -> None:
    text, error = await call("move", {"file_path": "Lens/Notes", "new_path": "Lens/Archive/Notes 2026"})
    assert not error, text
    assert text.startswith("Suggested moving the folder Lens/Notes -> Lens/Archive/Notes 2026")
    [row] = await rows()
    assert (row.kind, row.moves_folder, row.path, row.new_path) == (
        "move",
        True,
        "Lens/Notes",
        "Lens/Archive/Notes 2026",
    )
    # nothing moves before a reviewer accepts
    assert "Lens/Notes/Ideas.md" in (await call("glob", {"pattern": "**/*.md"}))[0]
    await accept_only_pending(store)
    listed, _ = await call("glob", {"pattern": "**/*.md"})
    assert "Lens/Archive/Notes 2026/Ideas.md" in listed and "Lens/Notes/Ideas.md" not in listed
    shown = await links(call, "Lens/Archive/Notes 2026/Ideas.md")
    assert "Unresolved" not in shown and "- Lens/Welcome.md" in shown
    assert "- Lens/Archive/Notes 2026/Ideas.md" in await links(call, "Lens/Welcome.md")
    lens = await Folder.objects.aget(name="Lens")
    entries = folderdoc.entries((await store.get(lens.doc_id)).doc)
    assert entries["/Archive"].type == entries["/Archive/Notes 2026"].type == "folder"
    assert "/Notes" not in entries


async def test_a_note_moves_into_another_folder_the_caller_may_write(
    store: Any, folders: Any, call: Any
) -> None:
    text, error = await call("move", {"file_path": "Lens/Notes/Ideas", "new_path": "Lens Edu/Week 1/"})
    assert not error, text
    assert "Lens/Notes/Ideas.md -> Lens Edu/Week 1/Ideas.md" in text
    before = await Document.objects.aget(path="/Notes/Ideas.md")
    await accept_only_pending(store)
    after = await Document.objects.select_related("folder").aget(doc_id=before.doc_id)
    assert (after.pk, after.folder.name, after.path) == (before.pk, "Lens Edu", "/Week 1/Ideas.md")
    shown = await links(call, "Lens Edu/Week 1/Ideas.md")
    assert "Unresolved" not in shown
    assert "- Lens/Welcome.md" in shown and "- Lens Edu/Syllabus.md" in shown


async def test_moving_into_a_folder_the_token_cannot_write_is_refused(
    store: Any, folders: Any, call: Any
) -> None:
    lens, _ = folders
    only_lens = access("suggest", frozenset({lens.pk}))
    for arguments in (
        {"file_path": "Lens/Notes/Ideas.md", "new_path": "Lens Edu/Ideas.md"},
        {"file_path": "Lens/Notes", "new_path": "Lens Edu/Notes"},
    ):
        text, error = await call("move", arguments, who=only_lens)
        assert error and "Folder not found: Lens Edu" in text
    text, error = await call(
        "move", {"file_path": "Lens Edu/Syllabus.md", "new_path": "Lens/Syllabus.md"}, who=only_lens
    )
    assert error and "not found" in text.lower()
    text, error = await call("move", {"file_path": "Lens/Notes", "new_path": "Lens/Old"}, who=access("view"))
    assert error and "read-only" in text
    assert await rows() == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"file_path": "Lens/Notes/Ideas.md", "new_path": "Lens/Welcome.md"}, "already exists"),
        ({"file_path": "Lens/Notes/Ideas.md", "new_path": "Lens/welcome"}, "only by letter case"),
        ({"file_path": "Lens/Notes", "new_path": "Lens/Notes/Inside"}, "into itself"),
        ({"file_path": "Lens/Notes/", "new_path": "Lens/Welcome.md"}, "already exists"),
        ({"file_path": "Lens/Notes/Ideas.md", "new_path": "Lens/Welcome.md/Ideas.md"}, "inside the document"),
        ({"file_path": "Lens/Notes/Ideas.md", "new_path": "Lens/../Ideas.md"}, "invalid new_path"),
        ({"file_path": "Lens/Notes/Ideas.md", "new_path": "Lens"}, "invalid new_path"),
        ({"file_path": "Lens/Notes/Ideas.md", "new_path": "Nowhere/Ideas.md"}, "Folder not found: Nowhere"),
        ({"file_path": "Lens/Nothing", "new_path": "Lens/Something"}, "not found"),
        ({"file_path": "Lens", "new_path": "Lens Edu/Lens"}, "invalid file_path"),
    ],
)
async def test_refused_moves_record_nothing_and_change_nothing(
    store: Any, folders: Any, call: Any, arguments: dict[str, str], message: str
) -> None:
    listed_before, _ = await call("glob", {"pattern": "**/*"})
    text, error = await call("move", arguments)
    assert error and message in text, text
    assert await rows() == []
    assert (await call("glob", {"pattern": "**/*"}))[0] == listed_before


async def test_a_collision_arising_before_acceptance_refuses_it_with_nothing_changed(
    store: Any, folders: Any, call: Any
) -> None:
    lens, _ = folders
    _, error = await call("move", {"file_path": "Lens/Notes", "new_path": "Lens/Later"})
    assert not error
    await document_create(store=store, folder=lens, path="/Later/Ideas.md", text="taken\n")
    [row] = await rows()
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=True)
    assert not decision.ok and "already exists" in decision.reason
    assert (await Suggestion.objects.aget(pk=row.pk)).status == "pending"
    listed, _ = await call("glob", {"pattern": "**/*.md"})
    assert "Lens/Notes/Ideas.md" in listed.splitlines()
