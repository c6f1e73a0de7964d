"""Content-addressed blobs through Django's storage: idempotent, checked keys, nothing outside files/."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lensrelay.files.blobs import (
    BlobMissing,
    InvalidHash,
    blob_delete,
    blob_exists,
    blob_key,
    blob_list,
    blob_put,
    blob_read,
    blob_size,
    validate_hash,
)

DOC = "f0a8e1f2-5b7c-4d3e-9a6b-1c2d3e4f5a6b-0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"


def test_put_read_is_content_addressed_and_idempotent(blob_dir: Path) -> None:
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10
    digest = blob_put(doc_id=DOC, data=data)
    assert digest == hashlib.sha256(data).hexdigest()
    stored = blob_dir / "files" / DOC / digest
    assert stored.read_bytes() == data
    assert blob_put(doc_id=DOC, data=data) == digest  # again: same key, no renamed copy
    assert sorted(p.name for p in (blob_dir / "files" / DOC).iterdir()) == [digest]
    assert blob_read(doc_id=DOC, hash=digest) == data
    assert blob_read(doc_id=DOC, hash=digest.upper()) == data
    assert blob_exists(doc_id=DOC, hash=digest)
    assert blob_size(doc_id=DOC, hash=digest) == len(data)


def test_missing_blob_and_other_documents() -> None:
    digest = blob_put(doc_id=DOC, data=b"one")
    other = DOC[:-1] + "5"
    assert not blob_exists(doc_id=other, hash=digest)
    with pytest.raises(BlobMissing):
        blob_read(doc_id=other, hash=digest)
    with pytest.raises(BlobMissing):
        blob_size(doc_id=DOC, hash="0" * 64)


@pytest.mark.parametrize("bad", ["", "abc", "g" * 64, "0" * 63, "0" * 65, "../" + "0" * 61, None, 5])
def test_hash_must_be_sha256_hex(bad: object) -> None:
    with pytest.raises(InvalidHash):
        validate_hash(bad)
    with pytest.raises(InvalidHash):
        blob_read(doc_id=DOC, hash=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "", "x" * 101, "a\\b", "é"])
def test_doc_id_is_checked_before_any_key_is_made(bad: str, blob_dir: Path) -> None:
    with pytest.raises(ValueError):
        blob_key(doc_id=bad, hash="0" * 64)
    with pytest.raises(ValueError):
        blob_put(doc_id=bad, data=b"x")
    assert not blob_dir.exists() or not any(blob_dir.rglob("*"))


def test_list_and_delete() -> None:
    first = blob_put(doc_id=DOC, data=b"version one")
    second = blob_put(doc_id=DOC, data=b"version two")
    listed = blob_list(doc_id=DOC)
    assert {blob.hash for blob in listed} == {first, second}
    assert {blob.size for blob in listed} == {11}
    assert blob_delete(doc_id=DOC, hash=first) == 1
    assert blob_delete(doc_id=DOC, hash=first) == 0
    assert [blob.hash for blob in blob_list(doc_id=DOC)] == [second]
    blob_put(doc_id=DOC, data=b"three")
    assert blob_delete(doc_id=DOC) == 2
    assert blob_list(doc_id=DOC) == []
    assert blob_list(doc_id=DOC[:-1] + "7") == []


def test_a_blob_that_does_not_match_its_hash_is_refused_on_read(blob_dir: Path) -> None:
    from lensrelay.files.blobs import BlobCorrupt

    digest = blob_put(doc_id=DOC, data=b"the real bytes")
    (blob_dir / "files" / DOC / digest).write_bytes(b"other bytes put there by a presigned upload")
    with pytest.raises(BlobCorrupt):
        blob_read(doc_id=DOC, hash=digest)
