"""The y-sweet file routes in process: URLs, signed tickets, token and folder checks, limits, bad input."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient

from lensrelay.docstore import folderdoc
from lensrelay.files.blobs import blob_exists, blob_put
from lensrelay.files.kinds import blob_entry_meta
from lensrelay.models import Document, Folder
from lensrelay.vault.attachments import attachment_write
from lensrelay.vault.folder_entries import content_doc_id
from lensrelay.vault.folders import mirror_folder

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
SHA = hashlib.sha256(PNG).hexdigest()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def local(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


@pytest.fixture
def client() -> AsyncClient:
    return AsyncClient()


async def two_folders(make_folder: Callable[..., Folder]) -> tuple[Folder, Folder]:
    return await sync_to_async(make_folder)("Lens"), await sync_to_async(make_folder)("Other")


async def test_upload_then_entry_then_download_round_trip(
    store: Any, make_folder: Callable[..., Folder], make_token: Callable[..., str], client: AsyncClient
) -> None:
    lens, _ = await two_folders(make_folder)
    token = await sync_to_async(make_token)("edit", (lens,))
    file_uuid = str(uuid.uuid4())
    doc_id = content_doc_id(lens, file_uuid)
    # As a Relay client does: ask where to upload, upload, then add the entry naming the hash.
    answer = await client.post(
        f"/f/{doc_id}/upload-url?hash={SHA}&content_type=image/png&content_length={len(PNG)}",
        headers=auth(token),
    )
    assert answer.status_code == 200, answer.content
    upload_url = answer.json()["uploadUrl"]
    assert upload_url.startswith("http://testserver/f/") and "ticket=" in upload_url
    put = await client.put(local(upload_url), data=PNG, content_type="image/png")
    assert put.status_code == 200, put.content
    assert put.json() == {"ok": True, "hash": SHA, "size": len(PNG)}

    room = await store.get(lens.doc_id)
    with room.transact():
        folderdoc.put_entry(
            room.doc, path="/pic.png", meta=blob_entry_meta(uuid=file_uuid, path="/pic.png", digest=SHA)
        )
    await room.flushed()
    await mirror_folder(store, folder_id=lens.pk, room=room)
    row = await sync_to_async(Document.objects.get)(doc_id=doc_id)
    assert (row.type, row.hash) == ("image", SHA)

    reader = await sync_to_async(make_token)("view", (lens,), "reader")
    answer = await client.get(f"/f/{doc_id}/download-url?hash={SHA}", headers=auth(reader))
    assert answer.status_code == 200, answer.content
    got = await client.get(local(answer.json()["downloadUrl"]))
    assert got.status_code == 200 and got.content == PNG and got["Content-Type"] == "image/png"
    # The bearer token works on the local route too.
    direct = await client.get(f"/f/{doc_id}/download?hash={SHA}", headers=auth(reader))
    assert direct.content == PNG
    assert (await client.head(f"/f/{doc_id}", headers=auth(reader))).status_code == 200
    assert (await client.head(f"/f/{doc_id}?hash={'0' * 64}", headers=auth(reader))).status_code == 404
    history = (await client.get(f"/f/{doc_id}/history", headers=auth(reader))).json()
    assert [(f["hash"], f["size"], f["isLatest"]) for f in history["files"]] == [(SHA, len(PNG), True)]


async def test_multipart_upload(
    make_folder: Callable[..., Folder], make_token: Callable[..., str], client: AsyncClient, blob_dir: Path
) -> None:
    lens, _ = await two_folders(make_folder)
    token = await sync_to_async(make_token)("edit", (lens,))
    doc_id = content_doc_id(lens, str(uuid.uuid4()))
    url = (await client.post(f"/f/{doc_id}/upload-url?hash={SHA}", headers=auth(token))).json()["uploadUrl"]

    answer = await client.post(local(url), data={"file": SimpleUploadedFile("pic.png", PNG, "image/png")})
    assert answer.status_code == 200, answer.content
    assert (blob_dir / "files" / doc_id / SHA).read_bytes() == PNG


async def test_another_folders_blob_looks_missing(
    store: Any, make_folder: Callable[..., Folder], make_token: Callable[..., str], client: AsyncClient
) -> None:
    lens, other = await two_folders(make_folder)
    document = await attachment_write(store=store, folder=other, path="/secret.png", data=PNG)
    outsider = await sync_to_async(make_token)("admin", (lens,))
    doc_id = document.doc_id
    for answer in (
        await client.get(f"/f/{doc_id}/download-url?hash={SHA}", headers=auth(outsider)),
        await client.get(f"/f/{doc_id}/download?hash={SHA}", headers=auth(outsider)),
        await client.get(f"/f/{doc_id}/history", headers=auth(outsider)),
        await client.post(f"/f/{doc_id}/upload-url?hash={SHA}", headers=auth(outsider)),
        await client.delete(f"/f/{doc_id}/{'1' * 64}", headers=auth(outsider)),
    ):
        assert answer.status_code == 404 and answer.json() == {"error": f"Document not found: {doc_id}"}
    assert (await client.head(f"/f/{doc_id}", headers=auth(outsider))).status_code == 404
    # A ticket is for one blob of one document: it opens nothing else.
    insider = await sync_to_async(make_token)("view", (other,))
    url = (await client.get(f"/f/{doc_id}/download-url?hash={SHA}", headers=auth(insider))).json()[
        "downloadUrl"
    ]
    ticket = urlsplit(url).query.split("ticket=")[1]
    other_id = doc_id[:-1] + ("1" if doc_id.endswith("0") else "0")
    forged = await client.get(f"/f/{other_id}/download?hash={SHA}&ticket={ticket}")
    assert forged.status_code == 403
    assert (await client.get(f"/f/{doc_id}/download?hash={SHA}")).status_code == 401


async def test_roles_and_bad_input_store_nothing(
    store: Any,
    make_folder: Callable[..., Folder],
    make_token: Callable[..., str],
    client: AsyncClient,
    settings: Any,
    blob_dir: Path,
) -> None:
    lens, _ = await two_folders(make_folder)
    document = await attachment_write(store=store, folder=lens, path="/a.png", data=PNG)
    doc_id = document.doc_id
    viewer = await sync_to_async(make_token)("view", (lens,))
    editor = await sync_to_async(make_token)("edit", (lens,))
    before = sorted(p.name for p in (blob_dir / "files" / doc_id).iterdir())

    assert (await client.post(f"/f/{doc_id}/upload-url?hash={SHA}", headers=auth(viewer))).status_code == 403
    assert (
        await client.put(f"/f/{doc_id}/upload?hash={SHA}", data=PNG, headers=auth(viewer))
    ).status_code == 403
    for bad in ("xyz", "0" * 63, "g" * 64, "../../etc/passwd"):
        answer = await client.post(f"/f/{doc_id}/upload-url?hash={bad}", headers=auth(editor))
        assert answer.status_code == 400 and "64 hexadecimal digits" in answer.json()["error"]
        assert (
            await client.get(f"/f/{doc_id}/download-url?hash={bad}", headers=auth(editor))
        ).status_code == 400
    other = b"not the same bytes"
    mismatch = await client.put(f"/f/{doc_id}/upload?hash={'a' * 64}", data=other, headers=auth(editor))
    assert mismatch.status_code == 400 and "do not match" in mismatch.json()["error"]

    settings.LENSRELAY_MAX_FILE_BYTES = 1000
    big = b"x" * 2000
    digest = hashlib.sha256(big).hexdigest()
    answer = await client.post(
        f"/f/{doc_id}/upload-url?hash={digest}&content_length=2000", headers=auth(editor)
    )
    assert answer.status_code == 413 and answer.json()["limit"] == 1000
    answer = await client.put(f"/f/{doc_id}/upload?hash={digest}", data=big, headers=auth(editor))
    assert answer.status_code == 413
    assert sorted(p.name for p in (blob_dir / "files" / doc_id).iterdir()) == before
    assert (await client.post("/f/../upload-url?hash=" + SHA, headers=auth(editor))).status_code == 404
    assert (await client.get(f"/f/{doc_id}/upload?hash={SHA}", headers=auth(editor))).status_code == 405


async def test_deleting_old_versions_not_the_current_one(
    store: Any, make_folder: Callable[..., Folder], make_token: Callable[..., str], client: AsyncClient
) -> None:
    lens, _ = await two_folders(make_folder)
    document = await attachment_write(store=store, folder=lens, path="/a.png", data=PNG)
    old = await sync_to_async(blob_put)(doc_id=document.doc_id, data=b"an older version")
    editor = await sync_to_async(make_token)("edit", (lens,))
    viewer = await sync_to_async(make_token)("view", (lens,))
    assert (await client.delete(f"/f/{document.doc_id}/{old}", headers=auth(viewer))).status_code == 403
    current = await client.delete(f"/f/{document.doc_id}/{SHA}", headers=auth(editor))
    assert current.status_code == 409 and blob_exists(doc_id=document.doc_id, hash=SHA)
    assert (await client.delete(f"/f/{document.doc_id}/{old}", headers=auth(editor))).status_code == 200
    assert not blob_exists(doc_id=document.doc_id, hash=old)
    assert (await client.delete(f"/f/{document.doc_id}/{old}", headers=auth(editor))).status_code == 404
    assert (await client.delete(f"/f/{document.doc_id}/nothex", headers=auth(editor))).status_code == 400
