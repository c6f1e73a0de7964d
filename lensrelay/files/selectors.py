"""Which folder a file's document belongs to, for the file routes' token checks."""

from __future__ import annotations

from lensrelay.auth import Access
from lensrelay.files.blobs import DOC_ID_RE
from lensrelay.folder_entries import content_doc_register
from lensrelay.models import Document, Folder, YDoc


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


def file_doc_register(*, access: Access, doc_id: str) -> None:
    """Record a file's document id a client uploads to before adding its entry (as Relay clients do).

    A token for one folder registers it for that folder, as `document_create` does; any other token
    leaves it unowned, and the folder whose entry names it first claims it (see `folder_entries`).
    """
    if access.folder_ids is not None and len(access.folder_ids) == 1:
        folder = Folder.objects.filter(pk=next(iter(access.folder_ids))).first()
        if folder is not None:
            content_doc_register(folder=folder, doc_id=doc_id)
            return
    YDoc.objects.get_or_create(doc_id=doc_id, defaults={"kind": YDoc.Kind.CONTENT, "folder": None})


def file_hash(doc_id: str) -> str:
    """The hash the file's entry names now ('' when none)."""
    return Document.objects.filter(doc_id=doc_id).values_list("hash", flat=True).first() or ""


def file_path(doc_id: str) -> str:
    return Document.objects.filter(doc_id=doc_id).values_list("path", flat=True).first() or ""
