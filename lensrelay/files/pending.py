"""File ids used before a folder entry names them: registering them (bounded), and removing them when no
entry ever came.

A Relay client uploads a new file's blob before it adds the file's `filemeta_v0` entry, so the file
routes accept an unknown id from an edit token and record it for the token's folder. Without bounds a
token could fill the store with ids and blobs that no folder lists and nothing ever removes. So:
- at most `LENSRELAY_MAX_PENDING_FILES` ids may wait for their entry per folder (and as many unowned,
  for tokens of every folder), and a waiting id holds at most `PENDING_BLOBS_PER_FILE` blobs;
- an id still without an entry `LENSRELAY_UNLINKED_FILE_HOURS` after it was registered is removed with
  its blobs by `unlinked_purge` (run by `manage.py purge_trash --yes`), as are blobs stored under an id
  the server does not know at all.

"Waiting" means: a content document with no `Document` row and no stored Yjs state. A note created by a
Yjs client before its entry has stored updates and is never touched here; so is anything in the trash
(trashed entries keep their rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from lensrelay.access.auth import Access
from lensrelay.docstore.persistence import content_doc_register
from lensrelay.docstore.tombstones import refuse_purged
from lensrelay.files.blobs import DOC_ID_RE, blob_delete, blob_list, file_storage
from lensrelay.models import Document, Folder, YDoc, YSnapshot, YUpdate

# A client uploads one blob and then adds the entry; a few more allow retries of a changed file.
PENDING_BLOBS_PER_FILE = 4


class TooManyPending(Exception):
    """The folder (or the unowned pool) already holds as many waiting file ids as allowed."""


@dataclass(frozen=True)
class Unlinked:
    doc_id: str
    folder_id: int | None
    registered: datetime | None  # None: blobs under an id the server has no record of


def _waiting() -> QuerySet[YDoc]:
    return (
        YDoc.objects.filter(kind=YDoc.Kind.CONTENT)
        .exclude(doc_id__in=Document.objects.values("doc_id"))
        .exclude(doc_id__in=YUpdate.objects.values("doc_id"))
        .exclude(doc_id__in=YSnapshot.objects.values("doc_id"))
    )


def pending_count(*, folder_id: int | None) -> int:
    """How many file ids wait for their entry in this folder (None: unowned ones)."""
    if folder_id is None:
        return _waiting().filter(folder__isnull=True).count()
    return _waiting().filter(folder_id=folder_id).count()


def is_waiting(*, doc_id: str) -> bool:
    return _waiting().filter(doc_id=doc_id).exists()


def file_doc_register(*, access: Access, doc_id: str) -> None:
    """Record a file's document id a client uploads to before adding its entry (as Relay clients do).

    A token for one folder registers it for that folder, as `document_create` does; any other token
    leaves it unowned, and the folder whose entry names it first claims it (see `folder_entries`).
    Raises TooManyPending past `LENSRELAY_MAX_PENDING_FILES` waiting ids for that folder, and
    DocumentPurged for a purged id: it is never used again.
    """
    refuse_purged(doc_id)
    folder: Folder | None = None
    if access.folder_ids is not None and len(access.folder_ids) == 1:
        folder = Folder.objects.filter(pk=next(iter(access.folder_ids))).first()
    with transaction.atomic():
        if YDoc.objects.filter(doc_id=doc_id).exists():
            return
        if pending_count(folder_id=folder.pk if folder else None) >= settings.LENSRELAY_MAX_PENDING_FILES:
            raise TooManyPending(
                f"{settings.LENSRELAY_MAX_PENDING_FILES} new files already wait for their folder entry "
                f"here; add their entries (or wait {settings.LENSRELAY_UNLINKED_FILE_HOURS:g} hours for "
                "unused ones to expire) before uploading more."
            )
        if folder is not None:
            content_doc_register(folder=folder, doc_id=doc_id)
        else:
            YDoc.objects.get_or_create(doc_id=doc_id, defaults={"kind": YDoc.Kind.CONTENT, "folder": None})


def pending_blob_allowed(*, doc_id: str, hash: str) -> bool:
    """Whether a blob with this hash may be stored for the id: always once an entry names it; while it
    waits, only up to `PENDING_BLOBS_PER_FILE` blobs (storing one already there changes nothing)."""
    if not is_waiting(doc_id=doc_id):
        return True
    hashes = {blob.hash for blob in blob_list(doc_id=doc_id)}
    return hash in hashes or len(hashes) < PENDING_BLOBS_PER_FILE


def _now() -> datetime:
    # One place for the clock, so tests (and a dry run "as of" a time) can move it.
    return timezone.now()


def unlinked_expired(*, older_than_hours: float, now: datetime | None = None) -> list[Unlinked]:
    """Waiting file ids registered more than `older_than_hours` ago, and blob directories of unknown ids
    whose newest blob is that old."""
    cutoff = (now or _now()) - timedelta(hours=older_than_hours)
    found = [
        Unlinked(doc_id=doc_id, folder_id=folder_id, registered=created)
        for doc_id, folder_id, created in _waiting()
        .filter(created__lt=cutoff)
        .order_by("created")
        .values_list("doc_id", "folder_id", "created")
    ]
    try:
        directories, _ = file_storage().listdir("files")
    except FileNotFoundError:
        directories = []
    strays = [d for d in directories if DOC_ID_RE.fullmatch(d) and d not in {".", ".."}]
    known = set(YDoc.objects.filter(doc_id__in=strays).values_list("doc_id", flat=True))
    known |= set(Document.objects.filter(doc_id__in=strays).values_list("doc_id", flat=True))
    for doc_id in sorted(set(strays) - known):
        blobs = blob_list(doc_id=doc_id)
        newest = max((b.modified for b in blobs if b.modified is not None), default=None)
        if blobs and newest is not None and newest < cutoff:
            found.append(Unlinked(doc_id=doc_id, folder_id=None, registered=None))
    return found


def unlinked_purge(*, older_than_hours: float, now: datetime | None = None) -> list[Unlinked]:
    """Remove what `unlinked_expired` finds: the id's record (only if still waiting) and its blobs."""
    expired = unlinked_expired(older_than_hours=older_than_hours, now=now)
    removed: list[Unlinked] = []
    for item in expired:
        if item.registered is not None:
            with transaction.atomic():
                # Checked again in the delete: an entry may have named it since it was listed.
                if not _waiting().filter(doc_id=item.doc_id).exists():
                    continue
                YDoc.objects.filter(doc_id=item.doc_id, kind=YDoc.Kind.CONTENT).delete()
        blob_delete(doc_id=item.doc_id)
        removed.append(item)
    return removed
