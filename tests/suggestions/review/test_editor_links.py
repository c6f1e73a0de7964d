"""What the editor's links read beyond its folder's tree (suggestions/review/editor_links.py): a note's
outline (headings and aliases), only for a note of that folder, and the other folders' notes and files
(paths only), for who may list the folder's tree; everyone else gets nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.vault.documents import document_create, subfolder_create
from lensrelay.vault.trash import documents_trash
from suggestions.review import editor_links
from suggestions.review.editor_links import aliases_of
from tests.suggestions.test_admin import CHANGELIST, client_for

pytestmark = pytest.mark.django_db(transaction=True)

NOTE = "---\naliases: [Gran, Old one]\n---\n# Oak\n\nText.\n\n## Roots *deep*\n\n```\n# not a heading\n```\n"


def outline_url(folder_id: int, doc_id: str) -> str:
    return f"{CHANGELIST}editor/tree/{folder_id}/note/{doc_id}/"


@pytest.fixture
async def notes(store: Any, make_folder: Any) -> dict[str, Any]:
    grove = await sync_to_async(make_folder)("Grove")
    other = await sync_to_async(make_folder)("Other")
    return {
        "grove": grove,
        "other": other,
        "oak": await document_create(store=store, folder=grove, path="/Oak.md", text=NOTE),
        "secret": await document_create(store=store, folder=other, path="/Secret.md", text="# Hidden\n"),
        "page": await document_create(store=store, folder=grove, path="/page.html", text="<h1>", type="file"),
    }


async def test_a_reader_gets_the_headings_and_aliases_of_a_note_of_the_folder(notes: dict[str, Any]) -> None:
    reader = await client_for("rita", "view_document")
    answer = await reader.get(outline_url(notes["grove"].pk, notes["oak"].doc_id))
    assert answer.status_code == 200
    outline = json.loads(answer.content)
    assert outline["path"] == "/Oak.md"
    assert [(h["level"], h["text"]) for h in outline["headings"]] == [(1, "Oak"), (2, "Roots *deep*")]
    assert outline["headings"][0]["line"] == 4  # as #L<n> counts: the front matter's lines included
    assert outline["aliases"] == ["Gran", "Old one"]


async def test_another_folders_note_a_file_or_a_trashed_note_is_not_found(
    store: Any, notes: dict[str, Any]
) -> None:
    reader = await client_for("rita", "view_document")
    grove = notes["grove"].pk
    # The folder in the address is the one checked: another folder's note through this folder's route.
    assert (await reader.get(outline_url(grove, notes["secret"].doc_id))).status_code == 404
    assert (await reader.get(outline_url(grove, notes["page"].doc_id))).status_code == 404
    assert (await reader.get(outline_url(grove, "no-such-doc"))).status_code == 404
    assert (await reader.get(outline_url(999_999, notes["oak"].doc_id))).status_code == 404
    await documents_trash(store=store, doc_ids=[notes["oak"].doc_id])
    assert (await reader.get(outline_url(grove, notes["oak"].doc_id))).status_code == 404


async def test_anonymous_visitors_and_staff_who_may_not_read_notes_get_nothing(notes: dict[str, Any]) -> None:
    url = outline_url(notes["grove"].pk, notes["oak"].doc_id)
    anonymous = await AsyncClient().get(url)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    blind = await client_for("bea", "view_suggestion", "review_suggestion")
    answer = await blind.get(url)
    assert answer.status_code == 403 and b"Oak" not in answer.content


def test_aliases_are_texts_from_aliases_or_alias() -> None:
    assert aliases_of(None) == []
    assert aliases_of({"aliases": "One"}) == ["One"]
    assert aliases_of({"alias": ["A", " ", None, {"x": 1}, 7]}) == ["A", "7"]
    assert len(aliases_of({"aliases": [f"a{i}" for i in range(1000)]})) == 100


# -- the other folders' entries ------------------------------------------------------------------------------

HOSTILE = '<img src=x onerror="alert(1)">&amp;<script>'


def elsewhere_url(folder_id: int) -> str:
    return f"{CHANGELIST}editor/tree/{folder_id}/elsewhere/"


async def listing(client: AsyncClient, folder_id: int) -> dict[str, Any]:
    answer = await client.get(elsewhere_url(folder_id))
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"] == "application/json"
    return json.loads(answer.content)


async def test_a_reader_gets_the_other_folders_notes_and_files_not_their_sub_folders_or_trash(
    store: Any, notes: dict[str, Any], make_folder: Any
) -> None:
    other = notes["other"]
    await subfolder_create(store=store, folder=other, path="/Deep")
    deep = await document_create(store=store, folder=other, path="/Deep/Target.md", text="x")
    board = await document_create(store=store, folder=other, path="/board.canvas", text="{}", type="canvas")
    binned = await document_create(store=store, folder=other, path="/Binned.md", text="gone")
    await documents_trash(store=store, doc_ids=[binned.doc_id])
    await sync_to_async(make_folder)("Another")
    reader = await client_for("rita", "view_document")
    answer = await listing(reader, notes["grove"].pk)
    # Grove's own entries are its tree's: only the other folders, by name.
    assert [folder["name"] for folder in answer["folders"]] == ["Another", "Other"]
    listed = answer["folders"][1]
    assert sorted(listed["entries"], key=lambda e: e["path"]) == [
        {"doc_id": deep.doc_id, "path": "/Deep/Target.md", "type": "markdown"},
        {"doc_id": notes["secret"].doc_id, "path": "/Secret.md", "type": "markdown"},
        {"doc_id": board.doc_id, "path": "/board.canvas", "type": "canvas"},
    ]
    assert listed["truncated"] is False
    assert answer["folders"][0]["entries"] == []
    # The URLs open a note of that folder in the editor, and read its outline through its own folder.
    assert answer["editorUrl"].replace("DOC", deep.doc_id) == f"{CHANGELIST}document/{deep.doc_id}/edit/"
    outline = await reader.get(listed["outlineUrl"].replace("DOC", notes["secret"].doc_id))
    assert json.loads(outline.content)["headings"][0]["text"] == "Hidden"


async def test_hostile_folder_names_and_paths_come_back_as_json_data_and_no_text_at_all(
    store: Any, notes: dict[str, Any], make_folder: Any
) -> None:
    evil = await sync_to_async(make_folder)(HOSTILE)
    await document_create(store=store, folder=evil, path=f"/{HOSTILE}.md", text="TEXT-OF-EVIL " + HOSTILE)
    reader = await client_for("rita", "view_document")
    answer = await reader.get(elsewhere_url(notes["grove"].pk))
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert b"<" not in answer.content and b">" not in answer.content and b"&" not in answer.content
    folders = {folder["name"]: folder for folder in json.loads(answer.content)["folders"]}
    assert [entry["path"] for entry in folders[evil.name]["entries"]] == [f"/{HOSTILE}.md"]
    # Paths only: neither the hostile note's text nor the other folder's note's heading is sent.
    assert b"TEXT-OF-EVIL" not in answer.content and b"Hidden" not in answer.content


async def test_a_folder_past_the_bound_is_cut_and_says_so(
    store: Any, notes: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("A", "B", "C"):
        await document_create(store=store, folder=notes["other"], path=f"/{name}.md", text="")
    monkeypatch.setattr(editor_links, "MAX_ENTRIES_PER_FOLDER", 2)
    reader = await client_for("rita", "view_document")
    listed = (await listing(reader, notes["grove"].pk))["folders"][0]
    assert [entry["path"] for entry in listed["entries"]] == ["/A.md", "/B.md"]
    assert listed["truncated"] is True


async def test_the_other_folders_are_listed_to_readers_only_on_get_and_for_a_folder_that_exists(
    notes: dict[str, Any],
) -> None:
    url = elsewhere_url(notes["grove"].pk)
    anonymous = await AsyncClient().get(url)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    blind = await client_for("bea", "view_suggestion", "review_suggestion")
    refused = await blind.get(url)
    assert refused.status_code == 403 and b"Secret" not in refused.content
    writer = await client_for("wes", "view_document", "edit_live")
    for method in (writer.post, writer.put, writer.delete):
        answer = await method(url)
        assert answer.status_code == 405 and b"Secret" not in answer.content
    assert (await writer.get(url)).status_code == 200
    missing = await writer.get(elsewhere_url(999_999))
    assert missing.status_code == 404 and b"Secret" not in missing.content
