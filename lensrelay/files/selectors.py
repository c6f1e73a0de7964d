"""Which folder a file's document belongs to, for the file routes' token checks."""

from __future__ import annotations

from lensrelay.files.blobs import DOC_ID_RE
from lensrelay.models import Document, YDoc


def file_doc_id_valid(doc_id: str) -> bool:
    return bool(DOC_ID_RE.fullmatch(doc_id)) and doc_id not in {".", ".."}


def file_scope(doc_id: str) -> tuple[bool, int | None]:
    """(known, folder id) of a document whose files are asked for. Its folder is its entry's folder, or
    the folder it was registered for before its entry exists; folder documents hold no files."""
    row = Document.objects.filter(doc_id=doc_id).values_list("folder_id", flat=True).first()
    if row is not None:
        return True, row
    ydoc = YDoc.objects.filter(doc_id=doc_id).values_list("kind", "folder_id").first()
    if ydoc is None or ydoc[0] == YDoc.Kind.FOLDER:
        return False, None
    return True, ydoc[1]


def file_hash(doc_id: str) -> str:
    """The hash the file's entry names now ('' when none)."""
    return Document.objects.filter(doc_id=doc_id).values_list("hash", flat=True).first() or ""


def file_path(doc_id: str) -> str:
    return Document.objects.filter(doc_id=doc_id).values_list("path", flat=True).first() or ""
