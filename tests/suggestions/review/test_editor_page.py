"""The editor page and its JSON endpoints (suggestions/review/editor_page.py, editor_tree.py), through
Django's async test client: who may open, decide and change the tree, and that refusals change nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.files.blobs import blob_put
from lensrelay.models import Document
from lensrelay.vault.documents import document_create
from tests.suggestions.test_admin import CHANGELIST, ORIGINAL, client_for, propose, raw_text, refreshed

pytestmark = pytest.mark.django_db(transaction=True)

EDITOR_PERMS = ("view_suggestion", "review_suggestion", "edit_live")


def editor_url(doc_id: str) -> str:
    return f"{CHANGELIST}document/{doc_id}/edit/"


@pytest.fixture
async def fox(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Fox.md", text=ORIGINAL)


async def test_the_page_carries_its_settings_and_no_token(store: Any, fox: Any) -> None:
    editor = await client_for("erin", *EDITOR_PERMS)
    page = (await editor.get(editor_url(fox.doc_id))).content.decode()
    config = json.loads(page.split('id="lr-editor-config" type="application/json">')[1].split("</script>")[0])
    assert config["wsPath"] == f"/d/{fox.doc_id}/ws" and config["canEdit"] and config["canReview"]
    assert config["markdown"] and config["text"] and config["user"] == "erin"
    assert "token" not in page.lower().replace("csrfmiddlewaretoken", "")
    assert 'id="lr-readonly"' not in page and "suggestions/editor/editor.js" in page


async def test_staff_without_the_live_edit_permission_get_the_page_read_only(store: Any, fox: Any) -> None:
    viewer = await client_for("victor", "view_suggestion", "view_document")
    page = (await viewer.get(editor_url(fox.doc_id))).content.decode()
    assert 'id="lr-readonly"' in page and "Can edit documents live" in page
    assert '"canEdit": false' in page and '"canReview": false' in page
    # Staff who may not view documents get neither the page nor the tree.
    blind = await client_for("bea", "view_suggestion", "review_suggestion")
    assert (await blind.get(editor_url(fox.doc_id))).status_code == 403
    assert (await blind.get(_tree_urls(fox)[0])).status_code == 403


async def test_people_who_are_not_staff_are_sent_to_sign_in(store: Any, fox: Any) -> None:
    for path in (editor_url(fox.doc_id), f"{editor_url(fox.doc_id)}pending/"):
        answer = await AsyncClient().get(path)
        assert answer.status_code == 302 and "/admin/login/" in answer["Location"]


async def test_an_unknown_document_is_not_found(store: Any, fox: Any) -> None:
    editor = await client_for("erin", *EDITOR_PERMS)
    assert (await editor.get(editor_url("no-such-doc"))).status_code == 404


async def test_pending_lists_each_suggestion_with_its_hunks(store: Any, fox: Any) -> None:
    proposed = await propose(store, fox, ("quick brown", "slow red"))
    editor = await client_for("erin", *EDITOR_PERMS)
    rows = json.loads((await editor.get(f"{editor_url(fox.doc_id)}pending/")).content)["pending"]
    assert rows == [
        {
            "uid": proposed.uid,
            "author": "claude",
            "kind": "edit",
            "status": "pending",
            "hunks": [{"old": "quick brown", "new": "slow red"}],
        }
    ]


async def test_deciding_inline_accepts_through_the_service(store: Any, fox: Any) -> None:
    proposed = await propose(store, fox, ("quick brown", "slow red"))
    editor = await client_for("erin", *EDITOR_PERMS)
    answer = await editor.post(
        f"{CHANGELIST}editor/decide/{proposed.uid}/", {"decision": "accept", "note": "ok"}
    )
    body = json.loads(answer.content)
    assert answer.status_code == 200 and body["ok"] and body["status"] == "accepted"
    assert await raw_text(store, fox) == ORIGINAL.replace("quick brown", "slow red")
    row = await refreshed(proposed)
    assert row.status == "accepted" and row.note == "ok" and row.decided_by.username == "erin"
    again = await editor.post(f"{CHANGELIST}editor/decide/{proposed.uid}/", {"decision": "reject"})
    assert again.status_code == 409 and not json.loads(again.content)["ok"]


async def test_accepting_with_changes_from_the_editor_keeps_both_texts(store: Any, fox: Any) -> None:
    proposed = await propose(store, fox, ("quick brown", "slow red"))
    editor = await client_for("erin", *EDITOR_PERMS)
    answer = await editor.post(
        f"{CHANGELIST}editor/decide/{proposed.uid}/", {"decision": "accept", "revision": "slowish red"}
    )
    body = json.loads(answer.content)
    assert answer.status_code == 200 and body["ok"], body
    assert "with your changes: {--slow--}{++slowish++} red." in body["message"]
    assert await raw_text(store, fox) == ORIGINAL.replace("quick brown", "slowish red")
    row = await refreshed(proposed)
    assert row.accepted_with_changes and row.proposed_insertions() == ["slow red"]
    assert row.revision == ["slowish red"]


@pytest.mark.parametrize(
    ("revision", "reason"),
    [
        (["slow {++red"], "contains the CriticMarkup delimiter '{++'"),
        (["slow red++}{++evil"], "contains the CriticMarkup delimiter"),
        ([""], "is empty"),
        (["one", "two"], "has 1 part(s), but 2 changed text(s) were given"),
        (["x" * 100_001], "longer than 100,000 characters"),
    ],
)
async def test_a_hostile_revision_from_the_editor_changes_nothing(
    store: Any, fox: Any, revision: list[str], reason: str
) -> None:
    proposed = await propose(store, fox, ("quick brown", "slow red"))
    before = await raw_text(store, fox)
    editor = await client_for("erin", *EDITOR_PERMS)
    answer = await editor.post(
        f"{CHANGELIST}editor/decide/{proposed.uid}/", {"decision": "accept", "revision": revision}
    )
    body = json.loads(answer.content)
    assert answer.status_code == 409 and not body["ok"] and reason in body["reason"], body
    assert await raw_text(store, fox) == before
    row = await refreshed(proposed)
    assert row.status == "pending" and not row.revision
    # Without the review permission nobody gets as far as the revision.
    writer = await client_for("walt", "view_suggestion", "edit_live")
    url = f"{CHANGELIST}editor/decide/{proposed.uid}/"
    assert (await writer.post(url, {"decision": "accept", "revision": "mine"})).status_code == 403
    assert await raw_text(store, fox) == before


async def test_deciding_is_refused_without_the_permission_without_csrf_or_with_bad_input(
    store: Any, fox: Any
) -> None:
    proposed = await propose(store, fox, ("quick brown", "slow red"))
    before = await raw_text(store, fox)
    url = f"{CHANGELIST}editor/decide/{proposed.uid}/"
    viewer = await client_for("victor", "view_suggestion", "edit_live")
    assert (await viewer.post(url, {"decision": "accept"})).status_code == 403
    no_csrf = await client_for("carl", *EDITOR_PERMS, csrf=True)
    assert (await no_csrf.post(url, {"decision": "accept"})).status_code == 403
    editor = await client_for("erin", *EDITOR_PERMS)
    assert (await editor.post(url, {"decision": "maybe"})).status_code == 400
    assert (await editor.get(url)).status_code == 405
    assert (await editor.post(f"{CHANGELIST}editor/decide/nope/", {"decision": "accept"})).status_code == 404
    all_url = f"{editor_url(fox.doc_id)}decide-all/"
    assert (await viewer.post(all_url, {"decision": "accept"})).status_code == 403
    assert (await editor.post(all_url, {"decision": "sideways"})).status_code == 400
    assert await raw_text(store, fox) == before
    assert (await refreshed(proposed)).status == "pending"


async def test_accept_all_decides_every_pending_suggestion_and_then_says_nothing_is_pending(
    store: Any, fox: Any
) -> None:
    await propose(store, fox, ("quick brown", "slow red"))
    await propose(store, fox, ("lazy dog", "sleepy cat"))
    editor = await client_for("erin", *EDITOR_PERMS)
    all_url = f"{editor_url(fox.doc_id)}decide-all/"
    body = json.loads((await editor.post(all_url, {"decision": "accept"})).content)
    assert body["ok"] and body["message"].startswith("2 accepted")
    assert await raw_text(store, fox) == ORIGINAL.replace("quick brown", "slow red").replace(
        "lazy dog", "sleepy cat"
    )
    again = await editor.post(all_url, {"decision": "accept"})
    assert again.status_code == 409 and "Nothing is pending" in json.loads(again.content)["reason"]


def _tree_urls(fox: Any) -> tuple[str, str]:
    return f"{CHANGELIST}editor/tree/{fox.folder_id}/", f"{CHANGELIST}editor/tree/{fox.folder_id}/act/"


async def _paths(folder_id: int) -> set[str]:
    return {p async for p in Document.objects.filter(folder_id=folder_id).values_list("path", flat=True)}


async def test_the_tree_lists_creates_moves_and_trashes(store: Any, fox: Any) -> None:
    listing, act = _tree_urls(fox)
    editor = await client_for("erin", *EDITOR_PERMS)
    entries = json.loads((await editor.get(listing)).content)["entries"]
    assert [(e["path"], e["type"]) for e in entries] == [("/Fox.md", "markdown")]
    assert entries[0]["url"] == editor_url(fox.doc_id)
    assert json.loads((await editor.post(act, {"action": "folder", "path": "/Notes"})).content)["ok"]
    assert json.loads((await editor.post(act, {"action": "note", "path": "Notes/New"})).content)["ok"]
    assert {"/Notes", "/Notes/New.md"} <= await _paths(fox.folder_id)
    moved = await editor.post(act, {"action": "move", "path": "/Notes/New.md", "new_path": "/Notes/Old.md"})
    assert json.loads(moved.content)["ok"], moved.content
    assert "/Notes/Old.md" in await _paths(fox.folder_id) and "/Notes/New.md" not in await _paths(
        fox.folder_id
    )
    trashed = await editor.post(act, {"action": "trash", "path": "/Notes/Old.md"})
    assert json.loads(trashed.content)["message"] == "Moved 1 entry to the trash."
    listed = [e["path"] for e in json.loads((await editor.get(listing)).content)["entries"]]
    assert listed == ["/Fox.md", "/Notes"]


async def test_the_tree_refuses_weaker_roles_missing_csrf_and_hostile_paths(store: Any, fox: Any) -> None:
    listing, act = _tree_urls(fox)
    before = await _paths(fox.folder_id)
    reader = await client_for("victor", "view_suggestion", "review_suggestion", "view_document")
    assert (await reader.get(listing)).status_code == 200  # reading is for staff who may view documents
    assert (await reader.post(act, {"action": "note", "path": "/X.md"})).status_code == 403
    no_csrf = await client_for("carl", *EDITOR_PERMS, csrf=True)
    assert (await no_csrf.post(act, {"action": "note", "path": "/X.md"})).status_code == 403
    assert (await AsyncClient().post(act, {"action": "note", "path": "/X.md"})).status_code == 302
    editor = await client_for("erin", *EDITOR_PERMS)
    for fields in (
        {"action": "note", "path": "/../escape"},
        {"action": "note", "path": "/_trash/sneaky"},
        {"action": "note", "path": "/Fox.md"},
        {"action": "note", "path": ""},
        {"action": "note", "path": "/" + "x" * 2000},
        {"action": "folder", "path": "/Fox.md/inside"},
        {"action": "move", "path": "/Fox.md", "new_path": "/_trash/Fox.md"},
        {"action": "move", "path": "/Missing.md", "new_path": "/Found.md"},
        {"action": "trash", "path": "/Missing.md"},
        {"action": "explode", "path": "/Fox.md"},
    ):
        answer = await editor.post(act, fields)
        body = json.loads(answer.content)
        assert answer.status_code == 400 and not body["ok"] and body["reason"], (fields, body)
    assert await _paths(fox.folder_id) == before
    assert (await editor.get(f"{CHANGELIST}editor/tree/999999/")).status_code == 404


async def test_the_review_page_and_the_document_page_lead_to_the_editor(store: Any, fox: Any) -> None:
    await propose(store, fox, ("quick brown", "slow red"))
    admin = await client_for("erin", *EDITOR_PERMS, "view_document")
    review = (await admin.get(f"{CHANGELIST}document/{fox.doc_id}/review/")).content.decode()
    assert f'id="open-editor" href="{editor_url(fox.doc_id)}"' in review
    document = (await admin.get(f"/admin/lensrelay/document/{fox.pk}/change/")).content.decode()
    assert f'id="document-editor" href="{editor_url(fox.doc_id)}"' in document


async def test_other_text_files_open_as_plain_text_and_binaries_are_not_edited(store: Any, fox: Any) -> None:
    editor = await client_for("erin", *EDITOR_PERMS)
    await Document.objects.filter(pk=fox.pk).aupdate(type="canvas")
    page = (await editor.get(editor_url(fox.doc_id))).content.decode()
    assert '"markdown": false' in page and '"text": true' in page and 'id="lr-editor"' in page
    await Document.objects.filter(pk=fox.pk).aupdate(type="image", hash="ab" * 32)
    page = (await editor.get(editor_url(fox.doc_id))).content.decode()
    assert '"text": false' in page and 'id="lr-binary"' in page and 'id="lr-editor"' not in page


# -- a stored file (blob) on the editor page: its preview or download --------------------------------------

FILE_PERMS = (*EDITOR_PERMS, "view_document")
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture
def blobs(settings: Any, tmp_path: Any) -> Any:
    settings.STORAGES = {
        **settings.STORAGES,
        "lensrelay_files": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "blobs"), "allow_overwrite": True},
        },
    }
    return tmp_path / "blobs"


async def as_file(document: Any, *, path: str, kind: str, data: bytes) -> str:
    """Turn the document into a stored file at `path` holding `data`; its bytes' URL."""
    digest = blob_put(doc_id=document.doc_id, data=data)
    await Document.objects.filter(pk=document.pk).aupdate(path=path, type=kind, hash=digest)
    return f"{CHANGELIST}document/{document.doc_id}/file/"


def csp_of(answer: Any) -> dict[str, str]:
    return {part.split(" ", 1)[0]: part for part in answer["Content-Security-Policy"].split("; ")}


@pytest.mark.parametrize(
    ("path", "kind", "element"),
    [
        ("/Fox.png", "image", '<img id="lr-preview"'),
        ("/Fox.webp", "image", '<img id="lr-preview"'),
        ("/Fox.pdf", "pdf", '<object id="lr-preview"'),
        ("/Fox.mp3", "audio", '<audio id="lr-preview"'),
        ("/Fox.mp4", "video", '<video id="lr-preview"'),
    ],
)
async def test_passive_files_are_previewed_from_the_file_route(
    store: Any, fox: Any, blobs: Any, path: str, kind: str, element: str
) -> None:
    editor = await client_for("erin", *FILE_PERMS)
    url = await as_file(fox, path=path, kind=kind, data=PNG)
    answer = await editor.get(editor_url(fox.doc_id))
    page = answer.content.decode()
    assert f'{element} src="{url}"' in page or f'{element} data="{url}"' in page
    assert f'id="lr-download" href="{url}" download="{path[1:]}"' in page
    policy = csp_of(answer)
    assert policy["object-src"] == ("object-src 'self'" if kind == "pdf" else "object-src 'none'")
    assert policy["script-src"] == "script-src 'self'" and policy["media-src"] == "media-src 'self'"
    served = await editor.get(url)
    assert served.status_code == 200 and served.content == PNG
    assert served["Content-Disposition"].startswith("inline")
    assert served["X-Content-Type-Options"] == "nosniff"
    assert served["Content-Security-Policy"] == "sandbox; default-src 'none'"


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/evil.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
        ("/evil.html", b"<script>alert(document.cookie)</script>"),
        ("/evil.bin", b"<html><script>alert(1)</script></html>"),
    ],
)
async def test_active_files_are_only_downloaded_never_shown(
    store: Any, fox: Any, blobs: Any, path: str, data: bytes
) -> None:
    editor = await client_for("erin", *FILE_PERMS)
    url = await as_file(fox, path=path, kind="file", data=data)
    answer = await editor.get(editor_url(fox.doc_id))
    page = answer.content.decode()
    assert 'id="lr-preview"' not in page and f'id="lr-download" href="{url}"' in page
    assert csp_of(answer)["object-src"] == "object-src 'none'"
    served = await editor.get(url)
    assert served.status_code == 200 and served.content == data
    assert served["Content-Disposition"].startswith("attachment")
    assert served["X-Content-Type-Options"] == "nosniff"
    assert served["Content-Security-Policy"] == "sandbox; default-src 'none'"


async def test_a_hostile_file_name_stays_a_quoted_name(store: Any, fox: Any, blobs: Any) -> None:
    editor = await client_for("erin", *FILE_PERMS)
    hostile = '/a"><script>alert(1)</script>\r\nX-Evil: 1;.png'
    url = await as_file(fox, path=hostile, kind="image", data=PNG)
    page = (await editor.get(editor_url(fox.doc_id))).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    served = await editor.get(url)
    assert served.status_code == 200 and "X-Evil" not in served
    disposition = served["Content-Disposition"]
    assert "\r" not in disposition and "\n" not in disposition
    assert disposition.startswith("inline; filename*=utf-8''") or disposition.startswith('inline; filename="')
    assert '"><script>' not in disposition


async def test_only_staff_who_may_view_documents_get_the_bytes(store: Any, fox: Any, blobs: Any) -> None:
    url = await as_file(fox, path="/Fox.png", kind="image", data=PNG)
    anonymous = await AsyncClient().get(url)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    editor = await client_for("erin", *EDITOR_PERMS)  # no view_document
    assert (await editor.get(url)).status_code == 403
    page = (await editor.get(editor_url(fox.doc_id))).content.decode()
    assert 'id="lr-preview"' not in page and 'id="lr-download"' not in page
    assert "needs the permission to view documents" in page


async def test_unknown_documents_text_documents_and_missing_bytes_are_not_found(
    store: Any, fox: Any, blobs: Any
) -> None:
    editor = await client_for("erin", *FILE_PERMS)
    assert (await editor.get(f"{CHANGELIST}document/no-such-doc/file/")).status_code == 404
    assert (await editor.get(f"{CHANGELIST}document/{fox.doc_id}/file/")).status_code == 404  # text
    await Document.objects.filter(pk=fox.pk).aupdate(path="/Gone.png", type="image", hash="ab" * 32)
    assert (await editor.get(f"{CHANGELIST}document/{fox.doc_id}/file/")).status_code == 404
