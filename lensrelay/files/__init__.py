"""Files that are not markdown: their types, their blobs, and writing and reading them (issue #12).

The services other modules call:
- `blob_put(*, doc_id, data) -> str`, `blob_read(*, doc_id, hash) -> bytes`, `blob_exists(*, doc_id, hash)`,
  `blob_delete(*, doc_id, hash=None) -> int`, `blob_list(*, doc_id)` (in `blobs`);
- `file_kind(path) -> str`, `is_text_file(path) -> bool`, `stored_as_text(path) -> bool` (in `kinds`);
- `attachment_write(*, store, folder, path, data) -> Document`, `attachment_bytes(*, document) -> bytes`
  (in `lensrelay.vault.attachments`, imported from there: it sits above documents and the vault).
"""

from lensrelay.files.blobs import (
    BlobCorrupt,
    BlobInfo,
    BlobMissing,
    InvalidHash,
    blob_delete,
    blob_exists,
    blob_list,
    blob_put,
    blob_read,
    blob_size,
    validate_hash,
)
from lensrelay.files.kinds import file_kind, is_text_file, mimetype, stored_as_text

__all__ = [
    "BlobCorrupt",
    "BlobInfo",
    "BlobMissing",
    "InvalidHash",
    "blob_delete",
    "blob_exists",
    "blob_list",
    "blob_put",
    "blob_read",
    "blob_size",
    "file_kind",
    "is_text_file",
    "mimetype",
    "stored_as_text",
    "validate_hash",
]
