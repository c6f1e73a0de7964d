"""A note's outline for the editor's link completion (suggestions/review/editor_links.py): its headings and
aliases for who may list the folder's tree, only for a note of that folder; everyone else gets nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.vault.documents import document_create
from lensrelay.vault.trash import documents_trash
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
