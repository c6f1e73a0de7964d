"""The blob services and presigned URLs on S3-compatible storage (django-storages + boto3) against a real
S3 API server: moto's, started for this module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from lensrelay.files import transfer
from lensrelay.files.blobs import (
    BlobMissing,
    blob_delete,
    blob_exists,
    blob_list,
    blob_put,
    blob_read,
    sha256_hex,
)
from tests.e2e.s3server import BUCKET, S3Server, s3_server

DOC = "f0a8e1f2-5b7c-4d3e-9a6b-1c2d3e4f5a6b-0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with s3_server(log=tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture(autouse=True)
def s3_storage(s3: S3Server, settings: Any, blob_dir: Path) -> S3Server:
    options = {
        "bucket_name": BUCKET,
        "endpoint_url": s3.endpoint,
        "region_name": "us-east-1",
        "access_key": "test-key-id",
        "secret_key": "test-secret-key",
        "addressing_style": "path",
        "signature_version": "s3v4",
        "file_overwrite": True,
        "querystring_auth": True,
        "querystring_expire": 600,
    }
    settings.STORAGES = {
        **settings.STORAGES,
        "lensrelay_files": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
    }
    return s3


def test_blobs_round_trip_through_the_bucket(s3: S3Server, blob_dir: Path) -> None:
    data = bytes(range(256)) * 40
    digest = blob_put(doc_id=DOC, data=data)
    assert blob_put(doc_id=DOC, data=data) == digest
    assert s3.keys(f"files/{DOC}/") == [f"files/{DOC}/{digest}"]
    assert blob_read(doc_id=DOC, hash=digest) == data and blob_exists(doc_id=DOC, hash=digest)
    assert not blob_dir.exists()  # nothing on the local disk
    second = blob_put(doc_id=DOC, data=b"second")
    assert {blob.hash for blob in blob_list(doc_id=DOC)} == {digest, second}
    with pytest.raises(BlobMissing):
        blob_read(doc_id=DOC, hash="0" * 64)
    assert blob_delete(doc_id=DOC) == 2 and s3.keys(f"files/{DOC}/") == []


def test_presigned_upload_and_download(s3: S3Server) -> None:
    data = b"\x89PNG\r\n\x1a\n presigned"
    digest = sha256_hex(data)
    assert transfer.uses_presigned_urls()
    url = transfer.upload_url(doc_id=DOC, hash=digest, content_type="image/png", content_length=len(data))
    assert url.startswith(s3.endpoint + f"/{BUCKET}/files/{DOC}/{digest}?")
    assert "content-length" in parse_qs(urlsplit(url).query)["X-Amz-SignedHeaders"][0]
    assert httpx.put(url, content=data, headers={"Content-Type": "image/png"}).status_code == 200
    assert blob_read(doc_id=DOC, hash=digest) == data
    download = transfer.download_url(doc_id=DOC, hash=digest, content_type="image/png", filename="a.png")
    got = httpx.get(download)
    assert got.content == data and got.headers["content-type"] == "image/png"
    assert got.headers["content-disposition"].startswith("inline")
    # Uploaded as text/html by a hostile client: the bucket still answers with an attachment of the
    # entry's type, never a page.
    hostile = b"<html><script>alert(1)</script></html>"
    html_digest = sha256_hex(hostile)
    put_url = transfer.upload_url(doc_id=DOC, hash=html_digest, content_type="text/html", content_length=None)
    assert httpx.put(put_url, content=hostile, headers={"Content-Type": "text/html"}).status_code == 200
    got = httpx.get(
        transfer.download_url(doc_id=DOC, hash=html_digest, content_type="text/html", filename="p.html")
    )
    assert got.content == hostile and got.headers["content-disposition"].startswith("attachment")
    blob_delete(doc_id=DOC)
