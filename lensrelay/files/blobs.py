"""Attachment blobs: immutable, content-addressed (`files/<doc id>/<sha256>`), behind Django's storage API.

The store is `STORAGES["lensrelay_files"]`: the filesystem under the data directory by default, or any
S3-compatible store through django-storages (see settings). Every key is built here from a checked document
id and a checked hash, so no caller's string ever becomes a storage path.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime

from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages

STORAGE_ALIAS = "lensrelay_files"
# Always used with fullmatch: `$` also matches before a trailing newline, so `re.match(r"...$")` let
# "<64 hex>\n" through.
SHA256_RE = re.compile(r"[0-9a-f]{64}")
DOC_ID_RE = re.compile(r"[A-Za-z0-9_.-]{1,100}")


class InvalidHash(ValueError):
    """A hash that is not 64 lower-case hex digits (a sha256)."""


class BlobMissing(FileNotFoundError):
    """No blob with this hash is stored for the document."""


class BlobCorrupt(OSError):
    """The stored bytes do not hash to their name (a presigned upload of other bytes, a damaged store)."""


@dataclass(frozen=True)
class BlobInfo:
    hash: str
    size: int
    modified: datetime | None


def file_storage() -> Storage:
    return storages[STORAGE_ALIAS]


def validate_hash(value: object) -> str:
    """The hash if it is a sha256 in hex (upper case accepted, answered lower case); InvalidHash otherwise."""
    if not isinstance(value, str) or not SHA256_RE.fullmatch(value.lower()):
        raise InvalidHash("hash must be the sha256 of the file: 64 hexadecimal digits")
    return value.lower()


def _doc_dir(doc_id: str) -> str:
    # '.' and '..' match the id pattern but would step out of the document's directory.
    if not DOC_ID_RE.fullmatch(doc_id) or doc_id in {".", ".."}:
        raise ValueError(f"not a document id: {doc_id[:100]!r}")
    return f"files/{doc_id}"


def blob_key(*, doc_id: str, hash: str) -> str:
    return f"{_doc_dir(doc_id)}/{validate_hash(hash)}"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_put(*, doc_id: str, data: bytes) -> str:
    """Store `data` for the document under its sha256; returns the hash. Storing the same bytes again
    changes nothing."""
    digest = sha256_hex(data)
    key = blob_key(doc_id=doc_id, hash=digest)
    storage = file_storage()
    if not storage.exists(key):
        saved = storage.save(key, ContentFile(data))
        if saved != key:  # a storage renaming on collision would orphan the blob: never accept that
            storage.delete(saved)
            raise RuntimeError(f"the file storage saved {key} as {saved}; configure it to overwrite")
    return digest


def blob_read(*, doc_id: str, hash: str) -> bytes:
    key = blob_key(doc_id=doc_id, hash=hash)
    storage = file_storage()
    try:
        with storage.open(key, "rb") as handle:
            data: bytes = handle.read()
    except FileNotFoundError as exc:
        raise BlobMissing(f"no blob {hash} for {doc_id}") from exc
    except OSError as exc:
        # S3 answers a missing key with its own error class; ask before blaming the store.
        if not storage.exists(key):
            raise BlobMissing(f"no blob {hash} for {doc_id}") from exc
        raise
    if sha256_hex(data) != hash.lower():
        raise BlobCorrupt(f"the blob {key} does not hold the bytes its hash names")
    return data


def blob_exists(*, doc_id: str, hash: str) -> bool:
    return file_storage().exists(blob_key(doc_id=doc_id, hash=hash))


def blob_size(*, doc_id: str, hash: str) -> int:
    key = blob_key(doc_id=doc_id, hash=hash)
    storage = file_storage()
    if not storage.exists(key):
        raise BlobMissing(f"no blob {hash} for {doc_id}")
    return storage.size(key)


def blob_list(*, doc_id: str) -> list[BlobInfo]:
    """The document's stored blobs, oldest first (its file's history: one blob per version)."""
    storage = file_storage()
    directory = _doc_dir(doc_id)
    try:
        _, names = storage.listdir(directory)
    except FileNotFoundError:
        return []
    blobs: list[BlobInfo] = []
    for name in names:
        if not SHA256_RE.fullmatch(name):
            continue  # a partial upload or a stranger's file: not a blob
        key = f"{directory}/{name}"
        try:
            modified: datetime | None = storage.get_modified_time(key)
        except (NotImplementedError, OSError):
            modified = None
        blobs.append(BlobInfo(hash=name, size=storage.size(key), modified=modified))
    blobs.sort(key=lambda blob: (blob.modified is None, blob.modified or datetime.min, blob.hash))
    return blobs


def blob_delete(*, doc_id: str, hash: str | None = None) -> int:
    """Delete one blob of the document, or all of them (hash None); returns how many were deleted."""
    storage = file_storage()
    hashes = [validate_hash(hash)] if hash is not None else [blob.hash for blob in blob_list(doc_id=doc_id)]
    deleted = 0
    for digest in hashes:
        key = blob_key(doc_id=doc_id, hash=digest)
        if storage.exists(key):
            storage.delete(key)
            deleted += 1
    return deleted
