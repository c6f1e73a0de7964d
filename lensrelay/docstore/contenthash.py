"""Content hashes: knowing a document's text is unchanged without loading it (bulk, for imports).

A content document's `YDoc.content_hash` is the SHA-256 of its text when its stored state held no logged
update past `YDoc.content_upto`. The stored state is the snapshot plus the log, and both only grow past
that id when the document changes; so while neither goes past it, the hash still describes the text.
Hashes are taken when an import creates a document, in the transaction that logs its first update: any
later change is logged once the document is known, so with a larger id from the same sequence.
Synchronous: callers run it on the store's database thread (or in a management command).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from lensrelay.docstore.acting import current_label
from lensrelay.docstore.bulkrows import db_value, insert_returning, insert_rows
from lensrelay.docstore.inlists import in_chunks
from lensrelay.models import Folder, YDoc, YSnapshot, YUpdate


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def content_docs_create(*, folder: Folder, docs: Sequence[tuple[str, str, bytes]], writer: str) -> None:
    """Write new content documents, each as (doc id, text, initial update), in a few transactions.

    Each gets its YDoc row (owned by `folder`, hashed at its one logged update) and that update, so a
    running server and its clients see it like any other logged change. Ids already registered keep
    their row and gain no hash (their stored state may hold more than this update).
    """
    created = db_value(timezone.now())
    author = current_label()[:200]
    for chunk in in_chunks(docs):
        with transaction.atomic():
            logged = insert_returning(
                YUpdate,
                columns=("doc_id", "data", "writer", "author", "created"),
                rows=[(doc_id, update, writer, author, created) for doc_id, _, update in chunk],
                returning=("doc_id", "id"),
            )
            if logged is None:  # a backend that cannot return ids from a bulk insert
                rows = YUpdate.objects.filter(doc_id__in=[doc_id for doc_id, _, _ in chunk])
                logged = list(rows.values("doc_id").annotate(m=Max("id")).values_list("doc_id", "m"))
            # An id given twice: its last text is the one its newest row leaves.
            upto: dict[str, int] = {}
            for doc_id, row_id in logged:
                upto[doc_id] = max(row_id, upto.get(doc_id, 0))
            texts = {doc_id: text for doc_id, text, _ in chunk}
            insert_rows(
                YDoc,
                columns=("doc_id", "kind", "folder", "created", "content_hash", "content_upto"),
                rows=[
                    (doc_id, YDoc.Kind.CONTENT.value, folder.pk, created, content_hash(text), upto[doc_id])
                    for doc_id, text in texts.items()
                ],
                ignore_conflicts=True,
            )


def content_unchanged(texts: Mapping[str, str]) -> set[str]:
    """Of these documents (doc id -> text), those whose stored text is known by its hash to equal it.

    Documents without a valid hash are not in the answer: the caller compares their stored text.
    """
    same: set[str] = set()
    for chunk in in_chunks(sorted(texts)):
        hashed = YDoc.objects.filter(doc_id__in=chunk).exclude(content_hash="")
        candidates = {
            doc_id: upto
            for doc_id, digest, upto in hashed.values_list("doc_id", "content_hash", "content_upto")
            if digest == content_hash(texts[doc_id])
        }
        if not candidates:
            continue
        newest = (
            YUpdate.objects.filter(doc_id__in=list(candidates))
            .values("doc_id")
            .annotate(m=Max("id"))
            .values_list("doc_id", "m")
        )
        folded = YSnapshot.objects.filter(doc_id__in=list(candidates)).values_list("doc_id", "upto_update_id")
        moved = {doc_id for doc_id, last in [*newest, *folded] if last > candidates[doc_id]}
        same.update(doc_id for doc_id in candidates if doc_id not in moved)
    return same
