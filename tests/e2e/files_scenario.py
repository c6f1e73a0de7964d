"""What the file storage must do for real clients, on whichever store the server runs (filesystem or S3):
a whole vault round trip, an image uploaded by one Yjs client and downloaded by another, folder isolation,
and bad input refused. The test modules run it against a server with their store."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.lensrelay.files.samples import png

from .conftest import YClientFactory
from .relay import Relay, bearer, poll, tree

FOLDER = "Lens Files"
OTHER = "Other Files"


VAULT: dict[str, bytes] = {
    "Index.md": "# Index\n\n![[diagram.png]] [[Notes/Idée]]\n".encode(),
    "Notes/Idée.md": "# Idée\r\n東京 🙂\r\n".encode(),
    "Notes/Deep/Nested/ünïcødé 図.png": png(1),
    "diagram.png": png(2),
    "Papers/Ünïcode paper.pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\ntrailer<<>>\n%%EOF\n",
    "Boards/Plan.canvas": json.dumps({"nodes": [], "edges": []}, indent="\t").encode(),
    "data/config.json": b'{"b": 1,   "a": [1,2]}',
    "site/page.html": "<!doctype html>\r\n<p>Héllo {++not markup++}</p>".encode(),
    "bin/all-bytes.bin": bytes(range(256)) * 4,
}


def files_of(found: dict[str, bytes | None]) -> dict[str, bytes]:
    return {path: data for path, data in found.items() if data is not None}


def vault_round_trip(relay: Relay, tmp: Path) -> None:
    source = tmp / "vault"
    for relative, data in VAULT.items():
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        (source / relative).write_bytes(data)
    out = relay.import_vault(source, folder=FOLDER)
    assert f"{len(VAULT)} created" in out and "0 skipped" in out, out
    assert "image 2" in out and "canvas 1" in out and "pdf 1" in out, out
    (tmp / "other").mkdir()
    relay.import_vault(tmp / "other", folder=OTHER)  # an empty second folder, for isolation checks
    exported = tmp / "export"
    out = relay.export_vault(folder=FOLDER, path=exported)
    assert f"{len(VAULT)} files" in out, out
    assert files_of(tree(exported)) == VAULT
    again = relay.import_vault(source, folder=FOLDER)
    assert f"0 created, 0 updated, {len(VAULT)} unchanged" in again, again


async def client_upload_and_download(relay: Relay, yclients: YClientFactory, tmp: Path) -> None:
    """Client A uploads an image through the file routes and adds its entry to the folder document; client
    B sees the entry, asks for the download URL and gets the same bytes."""
    writer = relay.create_token(name="files-writer", role="edit", folders=[FOLDER])
    reader = relay.create_token(name="files-reader", role="view", folders=[FOLDER])
    outsider = relay.create_token(name="files-outsider", role="admin", folders=[OTHER])
    folder_doc = await relay.folder_doc_id(writer, folder=FOLDER)
    image = png(42, size=64)
    digest = hashlib.sha256(image).hexdigest()
    file_uuid = str(uuid.uuid4())
    doc_id = f"{folder_doc[:36]}-{file_uuid}"
    path = "/Images/Uploaded ✓.png"

    async with httpx.AsyncClient(base_url=relay.http_url, timeout=20) as http:
        answer = await http.post(
            f"/f/{doc_id}/upload-url",
            params={"hash": digest, "content_type": "image/png", "content_length": str(len(image))},
            headers=bearer(writer),
        )
        assert answer.status_code == 200, answer.text
        upload_url = answer.json()["uploadUrl"]
        put = await http.put(upload_url, content=image, headers={"Content-Type": "image/png"})
        assert put.status_code == 200, put.text

        client_a = await yclients(relay.doc_url(folder_doc), folder_doc, params={"token": writer}, label="a")
        client_b = await yclients(relay.doc_url(folder_doc), folder_doc, params={"token": reader}, label="b")
        meta = {
            "id": file_uuid,
            "type": "image",
            "version": 0,
            "hash": digest,
            "mimetype": "image/png",
            "synctime": int(time.time() * 1000),
        }
        await client_a.transact(
            [
                {"op": "mapSet", "name": "filemeta_v0", "key": "/Images", "value": folder_entry()},
                {"op": "mapSet", "name": "filemeta_v0", "key": path, "value": meta},
                {"op": "mapSet", "name": "docs", "key": path, "value": file_uuid},
            ]
        )
        await client_b.wait_map("filemeta_v0", path)
        filemeta = await client_b.get_map("filemeta_v0")
        entry = filemeta[path]
        assert entry["hash"] == digest and entry["id"] == file_uuid

        b_doc_id = f"{folder_doc[:36]}-{entry['id']}"
        answer = await http.get(
            f"/f/{b_doc_id}/download-url", params={"hash": entry["hash"]}, headers=bearer(reader)
        )
        assert answer.status_code == 200, answer.text
        got = await http.get(answer.json()["downloadUrl"])
        assert got.status_code == 200 and got.content == image

        # The server mirrors the entry: the API lists it with its type, and an export writes it.
        await poll(
            lambda: relay.documents(reader, folder=FOLDER, path=path),
            lambda found: len(found) == 1 and found[0]["doc_id"] == doc_id,
        )
        exported = tmp / "after-upload"
        relay.export_vault(folder=FOLDER, path=exported)
        assert (exported / path.lstrip("/")).read_bytes() == image

        # A token for another folder: this document looks missing, whatever route.
        for response in (
            await http.get(f"/f/{doc_id}/download-url", params={"hash": digest}, headers=bearer(outsider)),
            await http.get(f"/f/{doc_id}/download", params={"hash": digest}, headers=bearer(outsider)),
            await http.get(f"/f/{doc_id}/history", headers=bearer(outsider)),
        ):
            assert response.status_code == 404, response.text
            assert response.json() == {"error": f"Document not found: {doc_id}"}
        # A view token may not upload.
        refused = await http.post(f"/f/{doc_id}/upload-url", params={"hash": digest}, headers=bearer(reader))
        assert refused.status_code == 403


def folder_entry() -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "type": "folder", "version": 0}


async def bad_input_stores_nothing(relay: Relay) -> None:
    writer = relay.create_token(name="files-bad-input", role="edit", folders=[FOLDER])
    doc_id = await relay.doc_id(writer, folder=FOLDER, path="/diagram.png")
    async with httpx.AsyncClient(base_url=relay.http_url, timeout=20) as http:
        history = (await http.get(f"/f/{doc_id}/history", headers=bearer(writer))).json()["files"]
        for bad in ("nothex", "0" * 63, "../../../etc/passwd", "Z" * 64):
            answer = await http.post(f"/f/{doc_id}/upload-url", params={"hash": bad}, headers=bearer(writer))
            assert answer.status_code == 400 and "hexadecimal" in answer.json()["error"]
        wrong = await http.put(
            f"/f/{doc_id}/upload", params={"hash": "ab" * 32}, content=b"other bytes", headers=bearer(writer)
        )
        assert wrong.status_code == 400 and "do not match" in wrong.json()["error"]
        big = b"x" * (2 * 1024 * 1024 + 1)
        digest = hashlib.sha256(big).hexdigest()
        too_big = await http.put(
            f"/f/{doc_id}/upload", params={"hash": digest}, content=big, headers=bearer(writer)
        )
        assert too_big.status_code == 413 and too_big.json()["limit"] == 2 * 1024 * 1024
        announced = await http.post(
            f"/f/{doc_id}/upload-url",
            params={"hash": digest, "content_length": str(len(big))},
            headers=bearer(writer),
        )
        assert announced.status_code == 413
        forged = await http.get(
            f"/f/{doc_id}/download", params={"hash": history[0]["hash"], "ticket": "forged"}
        )
        assert forged.status_code == 403
        assert (await http.get(f"/f/{doc_id}/history", headers=bearer(writer))).json()["files"] == history
