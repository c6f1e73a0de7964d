"""Writing files through the folder document: entry type and hash, rows mirrored, bytes read back."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Text

from lensrelay.docstore import folderdoc
from lensrelay.files.blobs import BlobMissing, blob_list
from lensrelay.models import Document, Folder
from lensrelay.text.vaultpath import InvalidPath
from lensrelay.vault.attachments import attachment_bytes, attachment_write

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(200))


async def entry_of(store: Any, folder: Folder, path: str) -> dict[str, Any]:
    room = await store.get(folder.doc_id)
    return folderdoc.entry_meta(room.doc, path=path)


async def test_blob_files_get_relay_entries_and_rows(store: Any, make_folder: Callable[..., Folder]) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    document = await attachment_write(store=store, folder=folder, path="/Assets/Ünï 図.png", data=PNG)
    digest = hashlib.sha256(PNG).hexdigest()
    assert (document.type, document.hash, document.path) == ("image", digest, "/Assets/Ünï 図.png")
    meta = await entry_of(store, folder, "/Assets/Ünï 図.png")
    assert meta["type"] == "image" and meta["hash"] == digest and meta["mimetype"] == "image/png"
    assert meta["id"] == document.uuid and meta["version"] == 0 and meta["synctime"] > 1.7e12  # unix ms
    # The parent sub-folder gets its entry, as Relay clients expect.
    assert (await entry_of(store, folder, "/Assets"))["type"] == "folder"
    assert await sync_to_async(attachment_bytes)(document=document) == PNG

    # Replacing keeps the id, records the new hash; the old blob stays (history).
    changed = PNG + b"more"
    again = await attachment_write(store=store, folder=folder, path="/Assets/Ünï 図.png", data=changed)
    assert again.doc_id == document.doc_id and again.hash == hashlib.sha256(changed).hexdigest()
    assert await sync_to_async(attachment_bytes)(document=again) == changed
    assert {blob.hash for blob in blob_list(doc_id=document.doc_id)} == {digest, again.hash}


async def test_json_canvas_are_blobs_html_is_text(store: Any, make_folder: Callable[..., Folder]) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    canvas = b'{\n\t"nodes":[],\n\t"edges":[]\n}'
    data = b'{"a": 1,   "b": [1, 2]}\n'
    html = "<p>Héllo {++not markup++}</p>\r\n".encode()
    board = await attachment_write(store=store, folder=folder, path="/Board.canvas", data=canvas)
    config = await attachment_write(store=store, folder=folder, path="/conf/data.json", data=data)
    page = await attachment_write(store=store, folder=folder, path="/page.html", data=html)
    assert (board.type, bool(board.hash)) == ("canvas", True)
    assert (config.type, bool(config.hash)) == ("file", True)
    assert (page.type, page.hash) == ("file", "")
    assert "hash" not in await entry_of(store, folder, "/page.html")
    for document, expected in ((board, canvas), (config, data), (page, html)):
        assert await sync_to_async(attachment_bytes)(document=document) == expected
    # The HTML is live text: another write edits the same Y.Text document.
    room = await store.get(page.doc_id)
    assert str(room.doc.get("contents", type=Text)) == html.decode()
    edited = await attachment_write(store=store, folder=folder, path="/page.html", data=b"<p>new</p>")
    assert edited.doc_id == page.doc_id
    assert await sync_to_async(attachment_bytes)(document=edited) == b"<p>new</p>"


async def test_non_utf8_html_is_kept_as_a_blob(store: Any, make_folder: Callable[..., Folder]) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    latin1 = "<p>café</p>".encode("latin-1")
    document = await attachment_write(store=store, folder=folder, path="/old.html", data=latin1)
    assert document.hash and await sync_to_async(attachment_bytes)(document=document) == latin1


@pytest.mark.parametrize("path", ["/../escape.png", "/a//b.png", "/", "/x/../../y.pdf", "/nul\x00.png"])
async def test_bad_paths_store_nothing(store: Any, make_folder: Callable[..., Folder], path: str) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    with pytest.raises(InvalidPath):
        await attachment_write(store=store, folder=folder, path=path, data=PNG)
    assert await sync_to_async(Document.objects.filter(folder=folder).count)() == 0
    room = await store.get(folder.doc_id)
    assert folderdoc.entries(room.doc) == {}


async def test_markdown_and_folders_are_refused(store: Any, make_folder: Callable[..., Folder]) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    with pytest.raises(ValueError, match="document_create"):
        await attachment_write(store=store, folder=folder, path="/Note.md", data=b"# hi")
    await attachment_write(store=store, folder=folder, path="/Dir/a.pdf", data=b"%PDF-1.4")
    with pytest.raises(IsADirectoryError):
        await attachment_write(store=store, folder=folder, path="/Dir", data=b"x")
    folder_row = await sync_to_async(Document.objects.get)(folder=folder, path="/Dir")
    with pytest.raises(IsADirectoryError):
        attachment_bytes(document=folder_row)


async def test_entry_without_uploaded_blob_reads_as_missing(
    store: Any, make_folder: Callable[..., Folder]
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    document = await attachment_write(store=store, folder=folder, path="/a.png", data=PNG)
    await sync_to_async(Document.objects.filter(pk=document.pk).update)(hash="")
    document.hash = ""
    with pytest.raises(BlobMissing):
        attachment_bytes(document=document)
