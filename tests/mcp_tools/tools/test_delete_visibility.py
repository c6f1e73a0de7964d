"""`delete` answers from what the caller may see only: a note in a folder it cannot see neither refuses
the delete nor is counted, and never changes how a visible note's link resolves; a caller who sees
everything is refused, naming it. The reviewer sees every linking note on the suggestion's page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.vault.documents import document_create
from lensrelay.vault.trash import DeleteRefused, documents_trash
from suggestions.lifecycle.moving import delete_linking_paths
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)


def sees(folders: dict[str, Any], *names: str) -> Any:
    return access(role="suggest", folder_ids=frozenset(folders[name].pk for name in names))


def shape(answer: str) -> str:
    """An answer with its path and suggestion id taken out, to compare two answers' shapes."""
    return re.sub(r"suggestion [0-9a-f]+", "suggestion ID", re.sub(r"Public/\w+\.md", "PATH", answer))


@pytest.fixture
async def folders(store: Any, make_folder: Any) -> dict[str, Any]:
    made = {name: await sync_to_async(make_folder)(name) for name in ("Public", "Secret")}
    await document_create(store=store, folder=made["Public"], path="/Lone.md", text="Nobody links here.\n")
    await document_create(store=store, folder=made["Public"], path="/Linked.md", text="Linked from Secret.\n")
    await document_create(store=store, folder=made["Public"], path="/Shared.md", text="Linked twice.\n")
    await document_create(store=store, folder=made["Public"], path="/Index.md", text="See [[Shared]].\n")
    await document_create(
        store=store, folder=made["Secret"], path="/Pointer.md", text="[[Public/Linked]] [[Public/Shared]]\n"
    )
    return made


async def test_a_hidden_linking_note_neither_refuses_nor_shows(folders: Any, call: Any) -> None:
    who = sees(folders, "Public")
    lone, lone_error = await call("delete", {"file_path": "Public/Lone.md"}, who=who)
    linked, linked_error = await call("delete", {"file_path": "Public/Linked.md"}, who=who)
    assert not lone_error and not linked_error
    assert shape(linked) == shape(lone)
    assert "Secret" not in linked and "cannot see" not in linked


async def test_a_refusal_names_visible_notes_only_and_reads_the_same_without_the_hidden_one(
    store: Any, folders: Any, call: Any
) -> None:
    who = sees(folders, "Public")
    with_hidden, error = await call("delete", {"file_path": "Public/Shared.md"}, who=who)
    assert error and "Public/Index.md" in with_hidden
    assert "Secret" not in with_hidden and "cannot see" not in with_hidden and "1 note" not in with_hidden
    pointer = await sync_to_async(lambda: folders["Secret"].documents.get(path="/Pointer.md").doc_id)()
    await documents_trash(store=store, doc_ids=[pointer], force=True)
    without, error = await call("delete", {"file_path": "Public/Shared.md"}, who=who)
    assert error and without == with_hidden


async def test_a_caller_who_sees_everything_is_refused_naming_the_note(folders: Any, call: Any) -> None:
    answer, error = await call("delete", {"file_path": "Public/Linked.md"}, who=access(role="suggest"))
    assert error and "Secret/Pointer.md" in answer


async def test_a_hidden_note_does_not_change_which_visible_notes_link(
    store: Any, make_folder: Any, call: Any
) -> None:
    # With everything visible, Public's [[Plan]] goes to Aaa/Plan.md ("Aaa" sorts first); for a caller
    # who sees Public and Alpha only it goes to Alpha/Plan.md, as get_links shows that caller.
    made = {name: await sync_to_async(make_folder)(name) for name in ("Public", "Alpha", "Aaa")}
    await document_create(store=store, folder=made["Public"], path="/Index.md", text="See [[Plan]].\n")
    await document_create(store=store, folder=made["Alpha"], path="/Plan.md", text="# Alpha plan\n")
    await document_create(store=store, folder=made["Aaa"], path="/Plan.md", text="# Hidden plan\n")
    answer, error = await call("delete", {"file_path": "Alpha/Plan.md"}, who=sees(made, "Public", "Alpha"))
    assert error and "Public/Index.md" in answer, answer


async def test_trashing_with_an_access_is_refused_by_visible_linkers_only(store: Any, folders: Any) -> None:
    public_only = sees(folders, "Public")
    linked = await sync_to_async(lambda: folders["Public"].documents.get(path="/Linked.md").doc_id)()
    shared = await sync_to_async(lambda: folders["Public"].documents.get(path="/Shared.md").doc_id)()
    with pytest.raises(DeleteRefused) as refused:
        await documents_trash(store=store, doc_ids=[shared], access=public_only)
    assert refused.value.linking == ["Public/Index.md"]
    assert str(refused.value).startswith("Refused: Public/Index.md still link to it;")
    report = await documents_trash(store=store, doc_ids=[linked], access=public_only)
    assert report.trashed


async def test_the_reviewer_is_shown_every_linking_note(store: Any, folders: Any) -> None:
    linked = await sync_to_async(lambda: folders["Public"].documents.get(path="/Linked.md").doc_id)()
    assert await delete_linking_paths(store, doc_id=linked) == ["Secret/Pointer.md"]
