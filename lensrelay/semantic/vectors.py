"""Stored passages and vectors: writing them, removing them, comparing them with the documents.

Synchronous services for the document store's database thread. A write re-checks, inside its
transaction, that the document still exists: a note deleted while it was being embedded leaves nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Max, QuerySet

from lensrelay.docstore.trashdoc import TRASH
from lensrelay.models import Document
from lensrelay.semantic.models import EmbeddedDocument, Passage
from lensrelay.semantic.passages import Passage as TextPassage


@dataclass(frozen=True)
class NoteRow:
    """A markdown document as its row says now (modified read before its text)."""

    doc_id: str
    folder_id: int
    path: str
    modified: float


@dataclass(frozen=True)
class EmbeddedPassage:
    passage: TextPassage
    digest: str
    vector: bytes  # float32, unit length


@dataclass(frozen=True)
class StoredPassage:
    id: int
    doc_id: str
    start_line: int
    end_line: int
    heading: str
    vector: bytes


def _notes() -> QuerySet[Document]:
    # Notes in a folder's trash are not embedded (see lensrelay.vault.trash): their passages go, and a restore
    # embeds them again.
    return Document.objects.filter(type="markdown").exclude(path__startswith=TRASH + "/")


def note_rows(*, doc_ids: Collection[str] | None = None, folder_id: int | None = None) -> list[NoteRow]:
    documents = _notes()
    if doc_ids is not None:
        documents = documents.filter(doc_id__in=list(doc_ids))
    if folder_id is not None:
        documents = documents.filter(folder_id=folder_id)
    fields = ("doc_id", "folder_id", "path", "modified")
    return [
        NoteRow(doc_id=doc_id, folder_id=fid, path=path, modified=modified.timestamp())
        for doc_id, fid, path, modified in documents.values_list(*fields)
    ]


def reusable_vectors(*, doc_ids: Collection[str], model: str) -> dict[str, bytes]:
    """Vectors already computed for these documents by this model, by digest (an edit to one section
    re-embeds that section only)."""
    rows = Passage.objects.filter(document__doc_id__in=list(doc_ids), document__model=model)
    return {digest: bytes(vector) for digest, vector in rows.values_list("digest", "vector")}


def passages_write(*, model: str, notes: Sequence[tuple[NoteRow, list[EmbeddedPassage]]]) -> None:
    """Replace the passages of each note, all in one transaction."""
    with transaction.atomic():
        ids = [row.doc_id for row, _ in notes]
        alive = set(_notes().filter(doc_id__in=ids).values_list("doc_id", flat=True))
        EmbeddedDocument.objects.filter(doc_id__in=[i for i in ids if i not in alive]).delete()
        new_passages: list[Passage] = []
        for row, passages in notes:
            if row.doc_id not in alive:
                continue
            document, _ = EmbeddedDocument.objects.update_or_create(
                doc_id=row.doc_id,
                defaults={
                    "folder_id": row.folder_id,
                    "path": row.path,
                    "modified": row.modified,
                    "model": model,
                },
            )
            document.passages.all().delete()
            new_passages += [
                Passage(
                    document=document,
                    ordinal=ordinal,
                    start_line=item.passage.start_line,
                    end_line=item.passage.end_line,
                    heading=item.passage.heading,
                    digest=item.digest,
                    vector=item.vector,
                )
                for ordinal, item in enumerate(passages)
            ]
        Passage.objects.bulk_create(new_passages, batch_size=500)


def passages_remove(*, doc_ids: Iterable[str]) -> int:
    ids = list(doc_ids)
    if not ids:
        return 0
    removed, _ = EmbeddedDocument.objects.filter(doc_id__in=ids).delete()
    return removed


def stale_notes(*, folder_id: int | None, model: str) -> tuple[list[str], list[str]]:
    """(notes to embed again, embedded documents that are gone) in one folder, or everywhere.

    A note is stale when it was never embedded, changed since, was renamed or moved (its title is part of
    what is embedded), or was embedded by another model.
    """
    current = {row.doc_id: row for row in note_rows(folder_id=folder_id)}
    embedded = EmbeddedDocument.objects.all()
    if folder_id is not None:
        embedded = embedded.filter(folder_id=folder_id)
    stored = {
        doc_id: (fid, path, modified, used)
        for doc_id, fid, path, modified, used in embedded.values_list(
            "doc_id", "folder_id", "path", "modified", "model"
        )
    }
    outdated = [
        doc_id
        for doc_id, row in current.items()
        if (entry := stored.get(doc_id)) is None
        or entry[:2] != (row.folder_id, row.path)
        or entry[2] < row.modified
        or entry[3] != model
    ]
    # Embedded here but no longer a note here: moved to another folder (embed it again) or gone.
    elsewhere = [doc_id for doc_id in stored if doc_id not in current]
    moved = set(_notes().filter(doc_id__in=elsewhere).values_list("doc_id", flat=True))
    return outdated + sorted(moved), [doc_id for doc_id in elsewhere if doc_id not in moved]


def passages_signature(*, model: str) -> tuple[int, int]:
    """(count, highest id) of this model's passages: it changes whenever any of them does."""
    found = Passage.objects.filter(document__model=model).aggregate(count=Count("id"), top=Max("id"))
    return found["count"], found["top"] or 0


def passage_ids(*, model: str) -> list[int]:
    return list(Passage.objects.filter(document__model=model).values_list("id", flat=True))


def stored_passages(*, ids: Collection[int]) -> list[StoredPassage]:
    fields = ("id", "document__doc_id", "start_line", "end_line", "heading", "vector")
    return [
        StoredPassage(
            id=pk, doc_id=doc_id, start_line=start, end_line=end, heading=heading, vector=bytes(vector)
        )
        for pk, doc_id, start, end, heading, vector in Passage.objects.filter(id__in=list(ids))
        .order_by("id")
        .values_list(*fields)
    ]
