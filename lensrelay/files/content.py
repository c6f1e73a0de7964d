"""A file's bytes, wherever they live: its blob, or the text of its Y.Text document."""

from __future__ import annotations

from lensrelay.docstore import persistence
from lensrelay.files.blobs import BlobMissing, blob_read
from lensrelay.files.kinds import FOLDER, MARKDOWN, stored_as_text
from lensrelay.models import Document


def attachment_bytes(*, document: Document) -> bytes:
    """A file's content: its blob, or the encoded text of a Y.Text document (HTML, and markdown too).

    Raises BlobMissing when the entry names a blob that is not stored (a client that has added the
    entry but not yet uploaded), IsADirectoryError for a sub-folder.
    """
    if document.type == FOLDER:
        raise IsADirectoryError(f"{document.path} is a folder")
    if document.hash:
        return blob_read(doc_id=document.doc_id, hash=document.hash)
    if document.type == MARKDOWN or stored_as_text(document.path):
        return (persistence.stored_text(document.doc_id) or "").encode("utf-8")
    raise BlobMissing(f"{document.path} names no stored content yet")
