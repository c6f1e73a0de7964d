"""The knowledge base's way in: "Open the knowledge base" on the admin home and at `/` opens the note the
person had open last, else the first note of the first folder; who may not read documents gets nothing."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.vault.documents import document_create
from lensrelay.vault.trash import documents_trash
from tests.suggestions.test_admin import CHANGELIST, client_for, messages_of

pytestmark = pytest.mark.django_db(transaction=True)

WAY_IN = f"{CHANGELIST}open/"


def editor_url(doc_id: str) -> str:
    return f"{CHANGELIST}document/{doc_id}/edit/"


async def test_it_opens_the_last_note_else_the_first_one(store: Any, make_folder: Any) -> None:
    beta = await sync_to_async(make_folder)("Beta")
    alpha = await sync_to_async(make_folder)("Alpha")
    later = await document_create(store=store, folder=beta, path="/A.md", text="b")
    first = await document_create(store=store, folder=alpha, path="/Z.md", text="z")
    page = await document_create(store=store, folder=alpha, path="/page.html", text="<p>", type="file")
    reader = await client_for("rita", "view_document")
    assert (await reader.get(WAY_IN))["Location"] == editor_url(first.doc_id)
    assert (await reader.get(editor_url(later.doc_id))).status_code == 200
    assert (await reader.get(WAY_IN))["Location"] == editor_url(later.doc_id)
    # The last note trashed: the first one again.
    await documents_trash(store=store, doc_ids=[later.doc_id])
    assert (await reader.get(WAY_IN))["Location"] == editor_url(first.doc_id)
    # Only a note is opened again: a file's page, or an id the session was made to hold, is not.
    assert (await reader.get(editor_url(page.doc_id))).status_code == 200
    assert (await reader.get(WAY_IN))["Location"] == editor_url(first.doc_id)
    session = await reader.asession()
    await session.aset("lensrelay.editor.last_note", "../../etc")
    await session.asave()
    assert (await reader.get(WAY_IN))["Location"] == editor_url(first.doc_id)


async def test_without_notes_it_says_so(store: Any, transactional_db: None) -> None:
    reader = await client_for("rita", "view_document")
    answer = await reader.get(WAY_IN, follow=True)
    assert answer.redirect_chain[-1][0] == "/admin/"
    assert any("no notes yet" in m for m in messages_of(answer))


async def test_who_may_not_read_documents_gets_nothing(store: Any, make_folder: Any) -> None:
    folder = await sync_to_async(make_folder)("Alpha")
    await document_create(store=store, folder=folder, path="/Z.md", text="z")
    stranger = await AsyncClient().get(WAY_IN)
    assert stranger.status_code == 302 and "/admin/login/" in stranger["Location"]
    blind = await client_for("bea", "view_suggestion", "review_suggestion")
    assert (await blind.get(WAY_IN)).status_code == 403
    assert 'id="open-knowledge-base"' not in (await blind.get("/admin/")).content.decode()


async def test_the_admin_home_and_the_landing_page_offer_it_to_staff(
    store: Any, transactional_db: None
) -> None:
    reader = await client_for("rita", "view_document")
    assert 'id="open-knowledge-base"' in (await reader.get("/admin/")).content.decode()
    assert 'id="link-open"' in (await reader.get("/")).content.decode()
    assert 'id="link-open"' not in (await AsyncClient().get("/")).content.decode()
