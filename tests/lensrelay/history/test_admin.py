"""The Versions pages: escaped text and diff, restore only with the live-edit permission, confirm first."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User
from django.test import AsyncClient
from pycrdt import Text

from lensrelay.history import admin_views
from lensrelay.history.models import DocVersion
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = "<script>alert(1)</script> & more\n"


@pytest.fixture
async def versioned(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/X.md", text=HOSTILE)
    room = await store.get(note.doc_id)
    await store.compact(room)
    with room.transact():
        room.doc.get("contents", type=Text).insert(0, "new first line\n")
    await room.flushed()
    await store.compact(room)
    old = await DocVersion.objects.filter(doc_id=note.doc_id).order_by("created", "id").afirst()
    return note, old


async def client_for(*, can_edit_live: bool) -> AsyncClient:
    name = "editor" if can_edit_live else "viewer"
    user = await sync_to_async(User.objects.create_user)(name, f"{name}@example.org", "pw", is_staff=True)
    names = ["view_document", *(["edit_live"] if can_edit_live else [])]
    perms = await sync_to_async(list)(Permission.objects.filter(codename__in=names))
    await sync_to_async(user.user_permissions.add)(*perms)
    client = AsyncClient()
    await client.aforce_login(user)
    return client


async def test_a_version_page_escapes_the_text_and_its_diff(versioned: Any) -> None:
    note, old = versioned
    client = await client_for(can_edit_live=False)
    listing = (await client.get(f"/admin/lensrelay/document/{note.pk}/versions/")).content.decode()
    assert listing.count('class="version"') == 2
    page = (await client.get(f"/admin/lensrelay/document/{note.pk}/versions/{old.pk}/")).content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "new&nbsp;first&nbsp;line" in page or "new first line" in page  # the diff to now
    assert 'id="restore-version"' not in page  # no permission: no button
    missing = await client.get(f"/admin/lensrelay/document/{note.pk}/versions/999999/")
    assert missing.status_code == 404


async def test_restoring_needs_the_live_edit_permission_and_a_confirmation(
    store: Any, versioned: Any
) -> None:
    note, old = versioned
    url = f"/admin/lensrelay/document/{note.pk}/versions/{old.pk}/restore/"
    viewer = await client_for(can_edit_live=False)
    assert (await viewer.post(url, {"post": "yes"})).status_code == 403
    room = await store.get(note.doc_id)
    assert str(room.doc.get("contents", type=Text)).startswith("new first line")
    editor = await client_for(can_edit_live=True)
    confirm = await editor.get(url)
    assert confirm.status_code == 200 and b"Yes, restore version" in confirm.content
    assert str(room.doc.get("contents", type=Text)).startswith("new first line")
    done = await editor.post(url, {"post": "yes"})
    assert done.status_code == 302
    assert str(room.doc.get("contents", type=Text)) == HOSTILE


LONG = "".join(f"Line {n} of a long note <b>{n}</b> & more.\n" for n in range(2500))


async def test_a_long_notes_diff_to_now_is_made_in_a_heavy_work_process(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await sync_to_async(make_folder)("Long")
    note = await document_create(store=store, folder=folder, path="/Long.md", text=LONG)
    assert len(LONG) * 2 > admin_views.COMPARE_IN_PROCESS_CHARS
    room = await store.get(note.doc_id)
    await store.compact(room)
    with room.transact():
        ytext = room.doc.get("contents", type=Text)
        at = LONG.index("Line 1200 ")
        ytext.insert(at, "<i>inserted</i> ")
    await room.flushed()
    await store.compact(room)
    old = await DocVersion.objects.filter(doc_id=note.doc_id).order_by("created", "id").afirst()
    assert old is not None
    offloaded: list[str] = []
    real = admin_views.offloaded_sync

    def spy(fn: Any, *args: Any) -> Any:
        offloaded.append(fn.__name__)
        return real(fn, *args)

    monkeypatch.setattr(admin_views, "offloaded_sync", spy)
    editor = await client_for(can_edit_live=True)
    page = (await editor.get(f"/admin/lensrelay/document/{note.pk}/versions/{old.pk}/")).content.decode()
    assert offloaded == ["compared"]
    assert "&lt;i&gt;inserted&lt;/i&gt;" in page and "<i>inserted" not in page
    assert "<b>1200</b>" not in page and "&lt;b&gt;1200&lt;/b&gt;" in page
    confirm = (await editor.get(f"/admin/lensrelay/document/{note.pk}/versions/{old.pk}/restore/")).content
    assert offloaded == ["compared", "compared"]
    assert b"(1 edit)" in confirm and b"&lt;i&gt;inserted&lt;/i&gt;" in confirm
