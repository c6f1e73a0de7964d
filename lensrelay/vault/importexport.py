"""Importing a directory (a whole vault: markdown, attachments, every file type) into a folder, and exporting
it back byte for byte.

Markdown and HTML become Y.Text content documents; every other file becomes a content-addressed blob
named by its entry's `hash` (see `lensrelay.files.kinds`). A re-import edits changed text through the CRDT,
stores a changed attachment as a new blob and points its entry at it, and leaves unchanged files alone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid as uuidlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pycrdt import Doc, Text

from lensrelay.docstore import contenthash, folderdoc, persistence
from lensrelay.docstore.firstupdate import text_update
from lensrelay.docstore.folderdoc import FileEntry
from lensrelay.docstore.offsets import text_replace
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache
from lensrelay.docstore.trashdoc import TRASH
from lensrelay.files.blobs import blob_put, sha256_hex
from lensrelay.files.content import BlobMissing, attachment_bytes
from lensrelay.files.kinds import MARKDOWN, blob_entry_meta, file_kind, stored_as_text
from lensrelay.models import Document, Folder, YDoc
from lensrelay.text.counts import counted
from lensrelay.text.unicode_text import UnencodableText, refuse_unencodable
from lensrelay.text.vaultpath import (
    FolderPaths,
    InvalidPath,
    names_trash,
    normalize_path,
    trash_refusal,
    validate_relative_path,
)
from lensrelay.vault.folders import content_doc_id, folder_create, mirror_folder, mirror_for

logger = logging.getLogger(__name__)

CONTENTS = "contents"

# (phase, done, total): long imports and exports report their progress through this.
Progress = Callable[[str, int, int], None]


def _no_progress(phase: str, done: int, total: int) -> None:
    pass


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    folders: int = 0
    skipped: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)  # files seen, by filemeta type
    blob_bytes: int = 0  # bytes of attachments newly stored

    def summary(self) -> str:
        text = (
            f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged, "
            f"{counted(self.folders, 'sub-folder')}, {len(self.skipped)} skipped"
        )
        if self.kinds:
            text += " (" + ", ".join(f"{kind} {count}" for kind, count in sorted(self.kinds.items())) + ")"
        if self.blob_bytes:
            text += f", {counted(self.blob_bytes, 'byte')} of attachments stored"
        return text


@dataclass(frozen=True)
class ScannedFile:
    """A file found by an import: its text when it becomes a Y.Text document, else where its bytes are."""

    kind: str
    source: Path
    text: str | None


def initial_update(text: str) -> bytes:
    return text_update(text, name=CONTENTS)


def _scan(root: Path, report: ImportReport) -> tuple[list[str], dict[str, ScannedFile]]:
    """Sub-folders and files under root, as folder-relative paths with a leading slash.

    Names are taken in their NFC form (macOS may store them decomposed); hidden files and folders
    (names starting with '.') are left out, like Obsidian does. Markdown must be UTF-8; HTML that is not
    is kept as a blob, like any other file.
    """
    folders: list[str] = []
    files: dict[str, ScannedFile] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel_dir = Path(dirpath).relative_to(root)
        for name in list(dirnames):
            try:
                refuse_unencodable(name, where="folder name")
            except UnencodableText as exc:
                dirnames.remove(name)  # and everything under it
                report.skipped.append(str(exc))
                continue
            if rel_dir == Path(".") and names_trash(name):
                dirnames.remove(name)  # the trash is the server's: no file of a vault lands in it
                report.skipped.append(f"/{name} ({trash_refusal('it')})")
        if rel_dir != Path("."):
            folders.append(normalize_path("/" + rel_dir.as_posix()))
        for name in sorted(filenames):
            rel = normalize_path("/" + (rel_dir / name).as_posix() if rel_dir != Path(".") else "/" + name)
            source = Path(dirpath) / name
            if name.startswith("."):
                report.skipped.append(f"{rel} (hidden)")  # as Obsidian hides them
                continue
            if rel in files:
                report.skipped.append(f"{rel} (another file has this name once NFC-normalised)")
                continue
            if source.is_symlink() or not source.is_file():
                report.skipped.append(f"{rel} (not a regular file)")
                continue
            try:
                # An undecodable file name arrives as surrogates: refuse it by name before anything is stored.
                refuse_unencodable(rel, where="file name")
                validate_relative_path(rel)
                kind = file_kind(rel)
                text: str | None = None
                if stored_as_text(rel):
                    try:
                        text = source.read_bytes().decode("utf-8")
                    except UnicodeDecodeError:
                        if kind == MARKDOWN:
                            raise
                files[rel] = ScannedFile(kind=kind, source=source, text=text)
            except UnencodableText as exc:
                report.skipped.append(str(exc))
            except InvalidPath as exc:
                report.skipped.append(f"{rel} ({exc})")
            except UnicodeDecodeError:
                report.skipped.append(f"{rel} (not UTF-8)")
    return folders, files


def _admitted(paths: FolderPaths, path: str, kind: str, report: ImportReport) -> bool:
    """Whether a new entry passes the path rules against the folder's entries (then it is recorded)."""
    try:
        paths.check(path, type=kind)
    except InvalidPath as exc:
        report.skipped.append(f"{path} ({exc})")
        return False
    paths.add(path, kind)
    return True


def _write_new_documents(*, folder: Folder, new_docs: list[tuple[str, str]], writer: str) -> None:
    states = [(doc_id, text, initial_update(text)) for doc_id, text in new_docs]
    contenthash.content_docs_create(folder=folder, docs=states, writer=writer)


def _stored_changes(texts: dict[str, str]) -> dict[str, str]:
    """Of these documents (doc id -> new text), those whose stored text differs: hashes first, then the
    stored states of the few a hash cannot vouch for (never hashed, or changed since), in bulk."""
    unknown = sorted(set(texts) - contenthash.content_unchanged(texts))
    stored = persistence.stored_texts(unknown)
    return {doc_id: texts[doc_id] for doc_id in unknown if stored.get(doc_id) != texts[doc_id]}


def _store_blobs(
    *, blobs: list[tuple[str, Path, str]], progress: Progress, report: ImportReport
) -> dict[str, str]:
    """Store attachments (doc id, file, hash it had before or '') as blobs; returns doc id -> new hash for
    each one whose bytes are new. Unchanged files cost a read and a hash, nothing is written for them."""
    stored: dict[str, str] = {}
    for done, (doc_id, source, before) in enumerate(blobs, start=1):
        data = source.read_bytes()
        if sha256_hex(data) != before:
            stored[doc_id] = blob_put(doc_id=doc_id, data=data)
            report.blob_bytes += len(data)
        progress("attachments", done, len(blobs))
    return stored


@dataclass
class _ImportPlan:
    """What a (re-)import does to each scanned file, decided before anything is written."""

    paths: FolderPaths  # the folder's paths as they will be, to admit each new one against
    new_docs: list[tuple[str, str]] = field(default_factory=list)  # (doc id, text) of new Y.Text documents
    new_texts: list[tuple[str, str, str]] = field(default_factory=list)  # their (path, uuid, type)
    new_blobs: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # doc id -> (path, uuid, type)
    blob_files: list[tuple[str, Path, str]] = field(default_factory=list)  # (doc id, file, stored hash or '')
    changed_blobs: dict[str, tuple[str, FileEntry]] = field(default_factory=dict)  # doc id -> (path, entry)
    changed: list[tuple[str, str]] = field(default_factory=list)  # (doc id, text) of existing texts
    added: list[str] = field(default_factory=list)  # doc ids of every new entry, sub-folders included


async def import_vault(
    *, store: DocStore, root: Path, folder_name: str, progress: Progress | None = None
) -> ImportReport:
    """Import (or re-import) a directory. Changed text is edited in place through the CRDT, so live
    clients see the change; a changed attachment gets a new blob and its entry the new hash; files never
    seen before become new documents or blobs."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    refuse_unencodable(folder_name, where="folder name")
    progress = progress or _no_progress
    report = ImportReport()
    folders, files = _scan(root, report)
    folder = await store.db(_get_or_create_folder, folder_name)
    folder_room = await store.get(folder.doc_id)
    assert folder_room is not None
    # Only entries the mirror admitted count: a hostile entry naming another folder's document must not
    # make a re-import write this vault's text into that document. Mirrored here and now, so loading
    # the folder document need not mirror it a second time.
    mirror_for(store).discard(folder.doc_id)
    await mirror_folder(store, folder_id=folder.pk, room=folder_room)
    existing = await store.db(_mirrored_entries, folder)
    plan = _import_plan(folder=folder, files=files, existing=existing, report=report)

    # Content first, then the folder entries that name it, so no client sees an entry without content.
    stored = await asyncio.to_thread(_store_blobs, blobs=plan.blob_files, progress=progress, report=report)
    with folder_room.transact():
        _entries_write(
            folder=folder,
            doc=folder_room.doc,
            folders=folders,
            existing=existing,
            plan=plan,
            stored=stored,
            report=report,
        )
    report.updated += sum(1 for doc_id in plan.changed_blobs if doc_id in stored)
    report.unchanged += sum(1 for doc_id in plan.changed_blobs if doc_id not in stored)
    # The importer holds the texts: the search index reads them from here, not back from the database.
    text_cache(store).prime(dict(plan.new_docs))
    # No await may come before this call: the store's one database thread then writes the content
    # before the folder document's update that names it.
    await store.db(_write_new_documents, folder=folder, new_docs=plan.new_docs, writer=store.writer)
    report.created = len(plan.new_docs) + len(plan.new_blobs)
    progress("documents", len(plan.new_docs), len(plan.new_docs))
    if plan.added or stored:
        await folder_room.flushed()
        # The change set the folder's mirroring going (rows, path index, search index): wait for it
        # rather than doing it twice, and do it here only if it left an entry without its row.
        await mirror_for(store).settled()
        if await store.db(_unmirrored, folder, plan.added):
            await mirror_folder(store, folder_id=folder.pk, room=folder_room)
    await _texts_edit(store=store, changed=plan.changed, report=report, progress=progress)
    return report


def _import_plan(
    *, folder: Folder, files: dict[str, ScannedFile], existing: dict[str, FileEntry], report: ImportReport
) -> _ImportPlan:
    """Sort the scanned files into new texts, new blobs, changed texts and changed blobs (and refusals)."""
    plan = _ImportPlan(paths=FolderPaths((entry.path, entry.type) for entry in existing.values()))
    for path, scanned in files.items():
        report.kinds[scanned.kind] += 1
        entry = existing.get(path)
        if entry is None:
            if not _admitted(plan.paths, path, scanned.kind, report):
                continue
            uuid = str(uuidlib.uuid4())
            doc_id = content_doc_id(folder, uuid)
            if scanned.text is not None:
                plan.new_texts.append((path, uuid, scanned.kind))
                plan.new_docs.append((doc_id, scanned.text))
            else:
                plan.new_blobs[doc_id] = (path, uuid, scanned.kind)
                plan.blob_files.append((doc_id, scanned.source, ""))
            plan.added.append(doc_id)
        elif entry.type != scanned.kind:
            report.skipped.append(f"{path} (a {entry.type} entry already has this path)")
        elif scanned.text is not None and not entry.hash:
            plan.changed.append((content_doc_id(folder, entry.uuid), scanned.text))
        else:
            doc_id = content_doc_id(folder, entry.uuid)
            plan.changed_blobs[doc_id] = (path, entry)
            plan.blob_files.append((doc_id, scanned.source, entry.hash))
    return plan


def _entries_write(
    *,
    folder: Folder,
    doc: Doc,
    folders: list[str],
    existing: dict[str, FileEntry],
    plan: _ImportPlan,
    stored: dict[str, str],
    report: ImportReport,
) -> None:
    """Write the folder document's entries of the plan (inside the caller's transaction): new sub-folders,
    new texts, new blobs with their hash, changed blobs with their new one."""
    for path in folders:
        if path not in existing and _admitted(plan.paths, path, "folder", report):
            uuid = str(uuidlib.uuid4())
            folderdoc.add_entry(doc, path=path, uuid=uuid, type="folder")
            plan.added.append(content_doc_id(folder, uuid))
            report.folders += 1
    for path, uuid, kind in plan.new_texts:
        folderdoc.add_entry(doc, path=path, uuid=uuid, type=kind)
    for doc_id, (path, uuid, kind) in plan.new_blobs.items():
        folderdoc.put_entry(
            doc, path=path, meta=blob_entry_meta(uuid=uuid, path=path, digest=stored[doc_id], kind=kind)
        )
    for doc_id, (path, entry) in plan.changed_blobs.items():
        if doc_id in stored:
            meta = folderdoc.entry_meta(doc, path=path)
            meta.update(blob_entry_meta(uuid=entry.uuid, path=path, digest=stored[doc_id], kind=entry.type))
            folderdoc.put_entry(doc, path=path, meta=meta)


async def _texts_edit(
    *, store: DocStore, changed: list[tuple[str, str]], report: ImportReport, progress: Progress
) -> None:
    """Edit the changed texts through their live rooms, so connected clients see the re-import as an edit.
    Unchanged files cost a hash comparison."""
    to_edit = await store.db(_stored_changes, dict(changed))
    report.unchanged += len(changed) - len(to_edit)
    for done, (doc_id, text) in enumerate(to_edit.items(), start=1):
        await store.db(persistence.create_ydoc, doc_id, YDoc.Kind.CONTENT)
        room = await store.get(doc_id)
        assert room is not None
        with room.transact():
            replaced = replace_text(room.doc, text)
        if replaced:
            report.updated += 1
            await room.flushed()
        else:
            report.unchanged += 1
        progress("edits", done, len(to_edit))


def replace_text(doc: Doc, new: str) -> bool:
    """Turn the document's text into `new` with one minimal edit (common prefix and suffix kept)."""
    ytext = doc.get(CONTENTS, type=Text)
    old = str(ytext)
    if old == new:
        return False
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    with doc.transaction():
        text_replace(
            ytext, current=old, start=prefix, end=len(old) - suffix, value=new[prefix : len(new) - suffix]
        )
    return True


def _mirrored_entries(folder: Folder) -> dict[str, FileEntry]:
    rows = Document.objects.filter(folder=folder).values_list("path", "uuid", "type", "hash")
    return {
        path: FileEntry(path=path, uuid=uuid, type=kind, hash=digest) for path, uuid, kind, digest in rows
    }


def _unmirrored(folder: Folder, doc_ids: list[str]) -> bool:
    for start in range(0, len(doc_ids), 500):
        chunk = doc_ids[start : start + 500]
        # Looked up by doc_id alone (unique): with the folder in the WHERE too, SQLite walked the
        # folder's index, every row of the folder for each chunk (0.3 s at 10,000 notes).
        owners = Document.objects.filter(doc_id__in=chunk).values_list("folder_id", flat=True)
        if sum(1 for owner in owners if owner == folder.pk) < len(set(chunk)):
            return True
    return False


def _get_or_create_folder(name: str) -> Folder:
    folder = Folder.objects.filter(name=name).first()
    return folder if folder is not None else folder_create(name=name)


@dataclass
class ExportReport:
    files: int = 0
    folders: int = 0
    bytes: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    missing: list[str] = field(default_factory=list)  # entries whose blob was never uploaded

    def summary(self) -> str:
        text = ", ".join(
            (counted(self.files, "file"), counted(self.folders, "sub-folder"), counted(self.bytes, "byte"))
        )
        if self.kinds:
            text += " (" + ", ".join(f"{kind} {count}" for kind, count in sorted(self.kinds.items())) + ")"
        if self.missing:
            text += f", {len(self.missing)} without stored content"
        return text


# What an export adds to a note's text, given its document id and text. The suggestions app adds the comment
# threads the text lost (their rows keep them), so an exported vault holds every comment; the core does not
# depend on it.
_export_addition: Callable[[str, str], str] | None = None


def set_export_addition(addition: Callable[[str, str], str]) -> None:
    global _export_addition
    _export_addition = addition


def _exported(document: Document, data: bytes) -> bytes:
    if _export_addition is None or document.type != "markdown" or document.hash:
        return data
    text = data.decode("utf-8")
    added = _export_addition(document.doc_id, text)
    return data if added == text else added.encode("utf-8")


def export_vault(*, folder: Folder, target: Path, progress: Progress | None = None) -> ExportReport:
    """Write every file and sub-folder of `folder` under `target`, each byte for byte as imported."""
    progress = progress or _no_progress
    report = ExportReport()
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    # The folder's trash is not part of the vault (see lensrelay.vault.trash): it stays on the server.
    documents = list(
        Document.objects.filter(folder=folder)
        .exclude(path=TRASH)
        .exclude(path__startswith=TRASH + "/")
        .order_by("path")
    )
    for done, document in enumerate(documents, start=1):
        destination = (root / document.path.lstrip("/")).resolve()
        if root not in destination.parents:
            raise InvalidPath(f"{document.path} would be written outside {root}")
        if document.type == "folder":
            destination.mkdir(parents=True, exist_ok=True)
            report.folders += 1
            continue
        try:
            data = _exported(document, attachment_bytes(document=document))
        except BlobMissing:
            report.missing.append(document.path)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)
        report.files += 1
        report.bytes += len(data)
        report.kinds[document.type] += 1
        progress("export", done, len(documents))
    return report
