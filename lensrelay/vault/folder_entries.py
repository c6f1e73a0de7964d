"""Which `filemeta_v0` entries a folder document may hold: the folder isolation rule of the mirror.

Anyone who may edit a folder document can write any entry into it, so the mirror trusts nothing in it.
An entry is mirrored into a `Document` row only when its id is a uuid naming content of this folder
(new, or created here before, and never purged), and its path passes the path rules against the folder's
other entries.
Everything else is ignored and logged: it never moves, creates or reveals a row, and never breaks the
mirror (so a hostile entry cannot stop the folder's legitimate changes either).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from lensrelay.docstore.folderdoc import FileEntry
from lensrelay.docstore.inlists import in_chunks
from lensrelay.docstore.tombstones import purged_among
from lensrelay.models import Document, Folder, YDoc, YSnapshot, YUpdate
from lensrelay.text.vaultpath import FolderPaths, InvalidPath, fold_key

logger = logging.getLogger(__name__)


# fullmatch only: `$` would accept a trailing newline.
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_LOGGED_LIMIT = 10_000
_logged: set[tuple[int, str, str]] = set()


def relay_prefix(folder_doc_id: str) -> str:
    """Content docs share their folder doc's relay id: `{relay_id}-{uuid}`."""
    return folder_doc_id[:36]


def content_doc_id(folder: Folder, uuid: str) -> str:
    return f"{relay_prefix(folder.doc_id)}-{uuid}"


def admissible_entries(
    *, folder: Folder, entries: Mapping[str, FileEntry], rows: Mapping[str, Document]
) -> dict[str, FileEntry]:
    """The entries of `folder`'s document that may become rows, by path. Call inside the mirror's
    transaction; `rows` are the folder's current rows by uuid. Logs every entry it leaves out, and why."""
    ignored: dict[str, str] = {}
    shaped: list[FileEntry] = []
    for path, entry in entries.items():
        if UUID_RE.fullmatch(entry.uuid) is None:
            ignored[path] = f"its id {entry.uuid[:60]!r} is not a uuid"
        else:
            shaped.append(entry)
    foreign = _not_ours(folder, {entry.uuid for entry in shaped} - set(rows))

    def settled_first(entry: FileEntry) -> tuple[int, str, str]:
        # Entries already mirrored at their path keep their place; newcomers yield to them.
        row = rows.get(entry.uuid)
        return (0 if row is not None and row.path == entry.path else 1, fold_key(entry.path), entry.path)

    paths = FolderPaths()
    admitted: dict[str, FileEntry] = {}
    used: set[str] = set()
    for entry in sorted(shaped, key=settled_first):
        if entry.uuid in foreign:
            ignored[entry.path] = foreign[entry.uuid]
            continue
        if entry.uuid in used:
            ignored[entry.path] = "its id is already used by another entry of this folder"
            continue
        try:
            # Trash moves keep the trash's own spelling; any other spelling of it is not the trash.
            paths.check(entry.path, type=entry.type, trash=True)
        except InvalidPath as exc:
            ignored[entry.path] = str(exc)
            continue
        paths.add(entry.path, entry.type)
        used.add(entry.uuid)
        admitted[entry.path] = entry
    for path, reason in ignored.items():
        _log_ignored(folder, path, reason)
    return admitted


def claim_content_docs(*, folder: Folder, doc_ids: list[str]) -> set[str]:
    """Register new content documents as this folder's; returns the ids the folder now owns."""
    owned: set[str] = set()
    for chunk in in_chunks(doc_ids):
        # An import registers its documents before their entries: build rows only for the others.
        known = set(YDoc.objects.filter(doc_id__in=chunk).values_list("doc_id", flat=True))
        YDoc.objects.bulk_create(
            [
                YDoc(doc_id=doc_id, kind=YDoc.Kind.CONTENT, folder=folder)
                for doc_id in chunk
                if doc_id not in known
            ],
            ignore_conflicts=True,
        )
        # Admitted unowned documents have no stored content (see _not_ours): claiming them reveals nothing.
        unowned = YDoc.objects.filter(doc_id__in=chunk, kind=YDoc.Kind.CONTENT, folder__isnull=True)
        unowned.update(folder=folder)
        # By doc_id alone (unique), owners compared here: with the folder in the WHERE, SQLite walked the
        # folder's index instead, every document of the folder for each chunk (quadratic in an import).
        owners = YDoc.objects.filter(doc_id__in=chunk).values_list("doc_id", "folder_id")
        owned.update(doc_id for doc_id, owner in owners if owner == folder.pk)
    return owned


def content_doc_transfer(*, doc_id: str, folder: Folder) -> None:
    """Hand a content document to another folder, for a cross-folder move service that has checked the
    caller may write both folders. Remove the entry from the old folder document (and mirror it) first,
    then transfer, then add the entry to the new folder document: the mirror admits it only there."""
    if Document.objects.filter(doc_id=doc_id).exclude(folder=folder).exists():
        raise ValueError(f"{doc_id} is still listed in its old folder; remove that entry first")
    YDoc.objects.filter(doc_id=doc_id, kind=YDoc.Kind.CONTENT).update(folder=folder)


def _not_ours(folder: Folder, uuids: set[str]) -> dict[str, str]:
    """Of these uuids new to the folder, those naming documents it may not hold: uuid -> reason."""
    uuid_of = {content_doc_id(folder, uuid): uuid for uuid in uuids}
    reasons: dict[str, str] = {}
    for chunk in in_chunks(sorted(uuid_of)):
        # A purged id is never used again: a client still holding its state would bring the text back.
        for doc_id in purged_among(chunk):
            reasons[uuid_of[doc_id]] = "its id names a purged document"
        for doc_id in Document.objects.filter(doc_id__in=chunk).values_list("doc_id", flat=True):
            reasons[uuid_of[doc_id]] = "its id names a document of another folder"
        unowned: list[str] = []
        known = YDoc.objects.filter(doc_id__in=chunk).values_list("doc_id", "kind", "folder")
        for doc_id, kind, owner in known:
            if kind != YDoc.Kind.CONTENT:
                reasons[uuid_of[doc_id]] = f"its id names a {kind} document, not a file's content"
            elif owner is None:
                unowned.append(doc_id)
            elif owner != folder.pk:
                reasons[uuid_of[doc_id]] = "its id names a document of another folder"
        if unowned:
            # Content of no known folder (left by a deletion before owners were recorded): nobody may
            # claim it, since it may have been any folder's.
            stored = set(YUpdate.objects.filter(doc_id__in=unowned).values_list("doc_id", flat=True))
            stored |= set(YSnapshot.objects.filter(doc_id__in=unowned).values_list("doc_id", flat=True))
            for doc_id in stored:
                reasons[uuid_of[doc_id]] = "its id names stored content of no known folder"
    return reasons


def _log_ignored(folder: Folder, path: str, reason: str) -> None:
    # The mirror runs after every change of the folder document: say it once, not on every keystroke.
    key = (folder.pk, path[:200], reason[:200])
    if key in _logged:
        logger.debug("folder %s: still ignoring entry %.200r: %s", folder.name, path, reason)
        return
    if len(_logged) >= _LOGGED_LIMIT:
        _logged.clear()
    _logged.add(key)
    logger.warning("folder %s: ignoring filemeta entry %.200r: %s", folder.name, path, reason)
