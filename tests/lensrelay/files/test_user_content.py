"""Bytes a token stored never act in the admin's origin: every route serving them sends attachment (but for
a few passive types), nosniff and a sandboxing CSP; hashes with a trailing newline are refused; the
separate-origin setting moves download links.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.access.user_content import SANDBOX_CSP
from lensrelay.docstore import folderdoc
from lensrelay.files.kinds import blob_entry_meta
from lensrelay.history.recording import version_record_stored
from lensrelay.models import Folder
from lensrelay.vault.folder_entries import content_doc_id
from lensrelay.vault.folders import mirror_folder

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE_HTML = b"<html><script>document.title='owned'</script></html>"
HOSTILE_SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'

# path -> (bytes, expected Content-Type, shown inline?)
FILES: dict[str, tuple[bytes, str, bool]] = {
    "page.html": (HOSTILE_HTML, "text/html", False),
    "pic.svg": (HOSTILE_SVG, "image/svg+xml", False),
    "data.json": (b'{"a": "<script>x</script>"}', "application/json", False),
    "board.canvas": (b'{"nodes": [], "edges": []}', "application/json", False),
    "feed.xml": (b"<?xml version='1.0'?><x:script xmlns:x='http://www.w3.org/1999/xhtml'/>", "", False),
    "pic.png": (b"\x89PNG\r\n\x1a\n<script>", "image/png", True),
    "pic.jpeg": (b"\xff\xd8\xff<html><script>", "image/jpeg", True),
    "pic.gif": (b"GIF89a<script>", "image/gif", True),
    "pic.webp": (b"RIFF0000WEBP<script>", "image/webp", True),
    "doc.pdf": (b"%PDF-1.4 <script>", "application/pdf", True),
    "song.mp3": (b"ID3<html><script>", "audio/mpeg", True),
    "clip.mp4": (b"\x00\x00\x00\x18ftypmp42<script>", "video/mp4", True),
    "blob.bin": (b"<html><script>alert(1)</script>", "application/octet-stream", False),
    "note.md": (b"<script>alert(1)</script>", "text/markdown", False),
}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def local(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


@pytest.fixture
def client() -> AsyncClient:
    return AsyncClient()


async def upload_as_client(
    store: Any, client: AsyncClient, *, folder: Folder, token: str, path: str, data: bytes
) -> tuple[str, str]:
    """What a Relay client (or an attacker with its token) does: register, upload, add the entry."""
    file_uuid = str(uuid.uuid4())
    doc_id = content_doc_id(folder, file_uuid)
    digest = hashlib.sha256(data).hexdigest()
    answer = await client.post(f"/f/{doc_id}/upload-url?hash={digest}", headers=auth(token))
    assert answer.status_code == 200, answer.content
    put = await client.put(local(answer.json()["uploadUrl"]), data=data, content_type="text/html")
    assert put.status_code == 200, put.content
    room = await store.get(folder.doc_id)
    with room.transact():
        folderdoc.put_entry(
            room.doc, path=f"/{path}", meta=blob_entry_meta(uuid=file_uuid, path=f"/{path}", digest=digest)
        )
    await room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=room)
    return doc_id, digest


def assert_inert(response: Any, *, inline: bool, filename: str) -> None:
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == SANDBOX_CSP
    disposition = response["Content-Disposition"]
    assert disposition.startswith("inline" if inline else "attachment"), disposition
    assert filename in disposition


async def test_every_file_type_downloads_inert(
    store: Any, make_folder: Callable[..., Folder], make_token: Callable[..., str], client: AsyncClient
) -> None:
    public = await sync_to_async(make_folder)("Public")
    attacker = await sync_to_async(make_token)("edit", (public,), "attacker")
    reader = await sync_to_async(make_token)("view", (public,), "reader")
    for name, (data, content_type, inline) in FILES.items():
        doc_id, digest = await upload_as_client(
            store, client, folder=public, token=attacker, path=name, data=data
        )
        link = await client.get(f"/f/{doc_id}/download-url?hash={digest}", headers=auth(reader))
        assert link.status_code == 200, (name, link.content)
        # The ticket URL needs no session or token: what a staff member would be sent.
        for got in (
            await client.get(local(link.json()["downloadUrl"])),
            await client.get(f"/f/{doc_id}/download?hash={digest}", headers=auth(reader)),
        ):
            assert got.status_code == 200 and got.content == data, name
            if content_type:
                assert got["Content-Type"] == content_type, name
            assert_inert(got, inline=inline, filename=name)


async def test_document_states_and_versions_are_inert(
    store: Any, make_folder: Callable[..., Folder], make_token: Callable[..., str], client: AsyncClient
) -> None:
    from lensrelay.vault.documents import document_create

    public = await sync_to_async(make_folder)("Public")
    reader = await sync_to_async(make_token)("view", (public,), "reader")
    document = await document_create(store=store, folder=public, path="/page.md", text="<script>x</script>")
    state = await client.get(f"/d/{document.doc_id}/as-update", headers=auth(reader))
    assert state.status_code == 200
    assert_inert(state, inline=False, filename=document.doc_id)
    version = await sync_to_async(version_record_stored)(doc_id=document.doc_id)
    assert version is not None
    vid = version.pk
    one = await client.get(f"/d/{document.doc_id}/versions/{vid}", headers=auth(reader))
    assert one.status_code == 200 and "<script>" in one.json()["text"]
    assert_inert(one, inline=False, filename=f"{document.doc_id}-version-{vid}.json")
    listed = await client.get(f"/d/{document.doc_id}/versions", headers=auth(reader))
    assert listed.status_code == 200 and listed.json()[0]["versionId"] == str(vid)
    assert_inert(listed, inline=False, filename=f"{document.doc_id}-versions.json")
    update = await client.get(f"/d/{document.doc_id}/versions/{vid}?format=update", headers=auth(reader))
    assert update.status_code == 200
    assert_inert(update, inline=False, filename=document.doc_id)


async def test_hash_with_a_trailing_newline_is_refused_and_stores_nothing(
    store: Any,
    make_folder: Callable[..., Folder],
    make_token: Callable[..., str],
    client: AsyncClient,
    blob_dir: Path,
) -> None:
    public = await sync_to_async(make_folder)("Public")
    editor = await sync_to_async(make_token)("edit", (public,))
    doc_id = content_doc_id(public, str(uuid.uuid4()))
    data = b"some bytes"
    digest = hashlib.sha256(data).hexdigest()
    for suffix in ("%0A", "%0D%0A", "%0A%0A"):
        answer = await client.post(f"/f/{doc_id}/upload-url?hash={digest}{suffix}", headers=auth(editor))
        assert answer.status_code == 400, suffix
        put = await client.put(f"/f/{doc_id}/upload?hash={digest}{suffix}", data=data, headers=auth(editor))
        assert put.status_code == 400 and "64 hexadecimal digits" in put.json()["error"], suffix
        assert (
            await client.head(f"/f/{doc_id}?hash={digest}{suffix}", headers=auth(editor))
        ).status_code in (
            400,
            404,
        )
    assert not (blob_dir / "files").exists() or not any((blob_dir / "files").rglob("*"))
    # A document id with a trailing newline is not one either.
    assert (
        await client.post(f"/f/{doc_id}%0A/upload-url?hash={digest}", headers=auth(editor))
    ).status_code == 404


def test_validators_use_a_full_match() -> None:
    from lensrelay.docstore.folderdoc import SHA256_HEX
    from lensrelay.files.blobs import InvalidHash, validate_hash
    from lensrelay.files.selectors import file_doc_id_valid
    from lensrelay.vault.folder_entries import UUID_RE

    with pytest.raises(InvalidHash):
        validate_hash("a" * 64 + "\n")
    assert not file_doc_id_valid("abc\n")
    assert SHA256_HEX.fullmatch("a" * 64 + "\n") is None
    assert UUID_RE.fullmatch(str(uuid.uuid4()) + "\n") is None


async def test_new_doc_id_with_a_trailing_newline_is_refused(
    make_token: Callable[..., str], client: AsyncClient
) -> None:
    admin = await sync_to_async(make_token)("admin", ())
    answer = await client.post(
        "/doc/new", data=b'{"docId": "abc\\n"}', content_type="application/json", headers=auth(admin)
    )
    assert answer.status_code == 400


async def test_separate_origin_for_download_links(
    store: Any,
    make_folder: Callable[..., Folder],
    make_token: Callable[..., str],
    client: AsyncClient,
    settings: Any,
) -> None:
    settings.LENSRELAY_USER_CONTENT_ORIGIN = "https://files.example.org/"
    public, other = await sync_to_async(make_folder)("Public"), await sync_to_async(make_folder)("Other")
    editor = await sync_to_async(make_token)("edit", (public,))
    doc_id, digest = await upload_as_client(
        store, client, folder=public, token=editor, path="page.html", data=HOSTILE_HTML
    )
    link = (await client.get(f"/f/{doc_id}/download-url?hash={digest}", headers=auth(editor))).json()
    assert link["downloadUrl"].startswith(f"https://files.example.org/f/{doc_id}/download?")
    # The setting changes where links point, not who may ask for them.
    outsider = await sync_to_async(make_token)("admin", (other,))
    assert (
        await client.get(f"/f/{doc_id}/download-url?hash={digest}", headers=auth(outsider))
    ).status_code == 404
