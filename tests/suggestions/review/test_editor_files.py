"""Files pasted or dropped into the editor (suggestions/review/editor_files.py), through Django's async test
client: added beside the note under a free, safe name; refused (nothing stored) for who may not edit live,
without CSRF, signed out, over the limit, for another folder's or a missing note, or a hostile name."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient, override_settings

from lensrelay.files.blobs import blob_read
from lensrelay.models import Document
from lensrelay.text.vaultpath import InvalidPath
from lensrelay.vault.documents import document_create
from suggestions.review.editor_files import free_path, safe_name
from tests.suggestions.test_admin import CHANGELIST, ORIGINAL, client_for

pytestmark = pytest.mark.django_db(transaction=True)

EDITOR_PERMS = ("view_suggestion", "edit_live", "view_document")
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
NOW = datetime(2026, 11, 29, 4, 5, 6, tzinfo=UTC)


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Deep/Fox.md", text=ORIGINAL)


def attach_url(doc_id: str) -> str:
    return f"{CHANGELIST}document/{doc_id}/edit/attach/"


def upload(name: str, data: bytes = PNG, content_type: str = "image/png") -> dict[str, Any]:
    return {"file": SimpleUploadedFile(name, data, content_type=content_type)}


async def _paths(folder_id: int) -> set[str]:
    return {p async for p in Document.objects.filter(folder_id=folder_id).values_list("path", flat=True)}


async def test_a_pasted_image_lands_beside_the_note_under_a_free_name(store: Any, note: Any) -> None:
    editor = await client_for("erin", *EDITOR_PERMS)
    first = json.loads((await editor.post(attach_url(note.doc_id), upload("Diagram.png"))).content)
    assert first["ok"] and first["path"] == "/Deep/Diagram.png" and first["embed"] == "![[Diagram.png]]"
    stored = await Document.objects.aget(doc_id=first["doc_id"])
    assert stored.folder_id == note.folder_id and blob_read(doc_id=stored.doc_id, hash=stored.hash) == PNG
    # The same name again (in any case) is never replaced: the next free one.
    second = json.loads((await editor.post(attach_url(note.doc_id), upload("diagram.png", b"other"))).content)
    assert (
        second["ok"] and second["path"] == "/Deep/diagram 1.png" and second["embed"] == "![[diagram 1.png]]"
    )
    assert blob_read(doc_id=stored.doc_id, hash=stored.hash) == PNG
    # The bytes come back from the editor's file route.
    shown = await editor.get(first["url"])
    assert shown.status_code == 200 and shown.content == PNG


async def test_who_may_not_edit_live_cannot_add_a_file(store: Any, note: Any) -> None:
    before = await _paths(note.folder_id)
    url = attach_url(note.doc_id)
    reader = await client_for("victor", "view_suggestion", "view_document")
    refused = await reader.post(url, upload("x.png"))
    assert refused.status_code == 403 and "Can edit documents live" in json.loads(refused.content)["reason"]
    suggester = await client_for("sid", "view_suggestion", "suggest_document")
    assert (await suggester.post(url, upload("x.png"))).status_code == 403
    no_csrf = await client_for("carl", *EDITOR_PERMS, csrf=True)
    assert (await no_csrf.post(url, upload("x.png"))).status_code == 403
    signed_out = await AsyncClient().post(url, upload("x.png"))
    assert signed_out.status_code == 302 and "/admin/login/" in signed_out["Location"]
    assert await _paths(note.folder_id) == before


async def test_over_the_limit_gets_a_clear_message_and_stores_nothing(store: Any, note: Any) -> None:
    before = await _paths(note.folder_id)
    editor = await client_for("erin", *EDITOR_PERMS)
    with override_settings(LENSRELAY_MAX_FILE_BYTES=16):
        answer = await editor.post(attach_url(note.doc_id), upload("big.png"))
    body = json.loads(answer.content)
    assert answer.status_code == 413 and not body["ok"] and "larger than the limit" in body["reason"]
    assert await _paths(note.folder_id) == before


async def test_hostile_names_stay_in_the_notes_directory_or_are_refused(
    store: Any, note: Any, make_folder: Any
) -> None:
    editor = await client_for("erin", *EDITOR_PERMS)
    url = attach_url(note.doc_id)
    for name, expected in (
        ("../../Other/escape.png", "/Deep/escape.png"),
        ("..\\..\\win.png", "/Deep/win.png"),
        ("[[x]]|y#z^.png", "/Deep/--x---y-z-.png"),
        ("line\nbreak\x00.png", "/Deep/linebreak.png"),  # Django's parser drops control characters
    ):
        body = json.loads((await editor.post(url, upload(name))).content)
        assert body["ok"] and body["path"] == expected, (name, body)
    before = await _paths(note.folder_id)
    for name in ("Evil.md", "noextension", "x.not an extension"):
        answer = await editor.post(url, upload(name, content_type="application/octet-stream"))
        assert answer.status_code == 400 and not json.loads(answer.content)["ok"], name
    assert (await editor.post(url, {})).status_code == 400
    assert (await editor.get(url)).status_code == 405
    assert await _paths(note.folder_id) == before
    # A note of another folder adds to that folder, never to this one; a file, a missing note: 404.
    other_folder = await sync_to_async(make_folder)("Other")
    other = await document_create(store=store, folder=other_folder, path="/Elsewhere.md", text="x")
    placed = json.loads((await editor.post(attach_url(other.doc_id), upload("o.png"))).content)
    assert (
        placed["ok"] and (await Document.objects.aget(doc_id=placed["doc_id"])).folder_id == other_folder.pk
    )
    assert await _paths(note.folder_id) == before
    image = await Document.objects.filter(folder_id=note.folder_id, path="/Deep/escape.png").afirst()
    assert image is not None
    assert (await editor.post(attach_url(image.doc_id), upload("y.png"))).status_code == 404
    assert (await editor.post(attach_url("nosuchdoc"), upload("y.png"))).status_code == 404


def test_safe_names() -> None:
    assert safe_name("image.png", "image/png", now=NOW) == "Pasted image 20261129040506.png"
    assert safe_name("blob", "image/jpeg", now=NOW) == "blob.jpg"
    assert safe_name("a/b/c.PDF", "", now=NOW) == "c.PDF"
    assert safe_name("a\x00b\nc\u202e.png", "", now=NOW) == "a-b-c-.png"
    long = safe_name("x" * 500 + ".png", "", now=NOW)
    assert len(long) == 120 and long.endswith(".png")
    for bad in ("Note.md", "..", "   ", "a.b c"):
        with pytest.raises(InvalidPath):
            safe_name(bad, "", now=NOW)


def test_free_paths() -> None:
    taken = {"/A.png", "/a 1.png", "/Deep/A.png"}
    assert free_path(taken, "/", "A.png") == "/A 2.png"
    assert free_path(taken, "/", "B.png") == "/B.png"
    assert free_path(taken, "/Deep", "a.png") == "/Deep/a 1.png"
