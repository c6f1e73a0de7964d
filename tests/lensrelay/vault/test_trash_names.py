"""`_trash` in any spelling is the trash's: nothing is created there or moved there but by the trash service,
whichever way it comes in (services, the admin's rename, a Yjs client's folder document, an import)."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import AsyncClient

from lensrelay.access.auth import Access
from lensrelay.docstore import folderdoc
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache
from lensrelay.models import Document, Folder
from lensrelay.text.vaultpath import InvalidPath
from lensrelay.vault.backlinks import backlink_indexer
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create, mirror_folder
from lensrelay.vault.moves import MoveRefused, entry_move
from lensrelay.vault.paths import path_index

pytestmark = pytest.mark.django_db(transaction=True)

EVERYONE = Access(name="test", role="admin", folder_ids=None)
SPELLINGS = ["/_TRASH/x.md", "/_Trash/x.md", "/_\uff34\uff32\uff21\uff33\uff28/x.md", "/_trash./x.md"]


async def _vault(store: DocStore) -> tuple[Folder, Document, Document]:
    folder = await sync_to_async(folder_create)(name="Public")
    note = await document_create(store=store, folder=folder, path="/x.md", text="the note\n")
    linker = await document_create(store=store, folder=folder, path="/Linker.md", text="see [[x]]\n")
    await backlink_indexer(store).settled()
    return folder, note, linker


async def _filemeta(store: DocStore, folder: Folder) -> dict[str, Any]:
    room = await store.get(folder.doc_id)
    assert room is not None
    return dict(folderdoc.maps(room.doc)[0].to_py())


@pytest.mark.parametrize("path", SPELLINGS)
async def test_no_document_is_created_in_any_spelling_of_the_trash(store: Any, path: str) -> None:
    folder, _, _ = await _vault(store)
    before = await _filemeta(store, folder)
    with pytest.raises(InvalidPath, match="'_trash' is reserved for it in every spelling"):
        await document_create(store=store, folder=folder, path=path, text="hidden\n")
    assert await _filemeta(store, folder) == before


@pytest.mark.parametrize("path", SPELLINGS)
async def test_no_move_lands_in_any_spelling_of_the_trash(store: Any, path: str) -> None:
    folder, note, _ = await _vault(store)
    before = await _filemeta(store, folder)
    with pytest.raises(MoveRefused, match="reserved"):
        await entry_move(store, folder_id=folder.pk, old="/x.md", new=path, folder=False)
    assert await _filemeta(store, folder) == before
    assert (await Document.objects.aget(doc_id=note.doc_id)).path == "/x.md"


@pytest.mark.parametrize("path", ["/_TRASH/x.md", "/_\uff34\uff32\uff21\uff33\uff28/x.md", "/_Trash/x.md"])
async def test_an_admin_rename_into_a_spelling_of_the_trash_is_a_form_error(
    store: Any, staff_client: AsyncClient, path: str
) -> None:
    folder, note, linker = await _vault(store)
    before = await _filemeta(store, folder)
    response = await staff_client.post(f"/admin/lensrelay/document/{note.pk}/change/", {"path": path})
    assert response.status_code == 200  # the form again, with its error
    page = response.content.decode()
    assert "is in the folder&#x27;s trash" in page and "reserved for it in every spelling" in page
    assert await _filemeta(store, folder) == before
    assert (await Document.objects.aget(doc_id=note.doc_id)).path == "/x.md"
    index = path_index(store)
    assert index.resolve(EVERYONE, "Public/x.md") is not None  # still visible to every tool
    assert await text_cache(store).get(linker.doc_id) == "see [[x]]\n"  # its incoming link intact
    room = await store.get(folder.doc_id)
    assert folderdoc.backlinks(room.doc)[note.uuid] == [linker.uuid]


async def test_a_clients_entry_in_another_spelling_of_the_trash_is_ignored(
    store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lensrelay.vault.folder_entries")
    folder, note, _ = await _vault(store)
    room = await store.get(folder.doc_id)
    assert room is not None
    with room.transact():  # as a Yjs client would: a new note under /_TRASH, and the note moved there
        folderdoc.add_entry(
            room.doc, path="/_TRASH", uuid="0" * 8 + "-0000-4000-8000-" + "0" * 12, type="folder"
        )
        folderdoc.add_entry(
            room.doc, path="/_TRASH/new.md", uuid="1" * 8 + "-1111-4111-8111-" + "1" * 12, type="markdown"
        )
    await room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=room)
    paths = await sync_to_async(lambda: sorted(Document.objects.values_list("path", flat=True)))()
    assert paths == ["/Linker.md", "/x.md"]
    assert path_index(store).resolve(EVERYONE, "Public/_TRASH/new.md") is None
    assert "ignoring filemeta entry '/_TRASH/new.md'" in caplog.text  # and said why
    assert "reserved for it in every spelling" in caplog.text
    # The trash's own spelling is where a client's delete goes: admitted, and in the trash.
    meta = folderdoc.entry_meta(room.doc, path="/x.md")
    with room.transact():
        folderdoc.remove_entry(room.doc, path="/x.md")
        folderdoc.put_entry(room.doc, path="/_trash/x.md", meta=meta)
    await room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=room)
    assert (await Document.objects.aget(doc_id=note.doc_id)).path == "/_trash/x.md"
    assert path_index(store).resolve(EVERYONE, "Public/x.md") is None


def test_an_import_leaves_out_every_spelling_of_the_trash(tmp_path: Path) -> None:
    for name in ("_TRASH/a.md", "_Trash/b.md", "_trash/c.md", "Notes/_trash/d.md", "e.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    err = io.StringIO()
    call_command(
        "import_vault", str(tmp_path), "--folder", "Lens", "--no-progress", stdout=io.StringIO(), stderr=err
    )
    paths = sorted(Document.objects.exclude(type="folder").values_list("path", flat=True))
    assert paths == ["/Notes/_trash/d.md", "/e.md"]
    skipped = err.getvalue()
    for name in ("/_TRASH", "/_Trash", "/_trash"):
        assert f"skipped {name} (it is in the folder's trash" in skipped
