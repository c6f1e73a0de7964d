"""Importing a directory of markdown into a folder, and exporting it back byte for byte."""

from __future__ import annotations

import logging
import os
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pycrdt import Doc, Text

from lensrelay.docstore import contenthash, folderdoc, persistence
from lensrelay.docstore.folderdoc import FileEntry
from lensrelay.docstore.offsets import text_replace
from lensrelay.docstore.store import DocStore
from lensrelay.folders import content_doc_id, folder_create, mirror_folder, mirror_for
from lensrelay.models import Document, Folder, YDoc
from lensrelay.texts import text_cache
from lensrelay.unicode_text import UnencodableText, refuse_unencodable
from lensrelay.vaultpath import FolderPaths, InvalidPath, normalize_path, validate_relative_path

logger = logging.getLogger(__name__)

CONTENTS = "contents"
MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    folders: int = 0
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.folders} sub-folders, {len(self.skipped)} skipped"
        )
        return text


def initial_update(text: str) -> bytes:
    doc: Doc[Any] = Doc()
    doc.get(CONTENTS, type=Text).insert(0, text)
    return doc.get_update()


def _scan(root: Path, report: ImportReport) -> tuple[list[str], dict[str, str]]:
    """Sub-folders and markdown files under root, as folder-relative paths with a leading slash.

    Names are taken in their NFC form (macOS may store them decomposed); hidden files and folders
    (names starting with '.') are left out, like Obsidian does.
    """
    folders: list[str] = []
    files: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel_dir = Path(dirpath).relative_to(root)
        for name in list(dirnames):
            try:
                refuse_unencodable(name, where="folder name")
            except UnencodableText as exc:
                dirnames.remove(name)  # and everything under it
                report.skipped.append(str(exc))
        if rel_dir != Path("."):
            folders.append(normalize_path("/" + rel_dir.as_posix()))
        for name in sorted(filenames):
            rel = normalize_path("/" + (rel_dir / name).as_posix() if rel_dir != Path(".") else "/" + name)
            if name.startswith(".") or not name.lower().endswith(MARKDOWN_SUFFIXES):
                report.skipped.append(f"{rel} (not markdown)")
                continue
            if rel in files:
                report.skipped.append(f"{rel} (another file has this name once NFC-normalised)")
                continue
            try:
                # An undecodable file name arrives as surrogates: refuse it by name before anything is stored.
                refuse_unencodable(rel, where="file name")
                validate_relative_path(rel)
                files[rel] = (Path(dirpath) / name).read_bytes().decode("utf-8")
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


async def import_vault(*, store: DocStore, root: Path, folder_name: str) -> ImportReport:
    """Import (or re-import) a directory. Changed files are edited in place through the CRDT, so live
    clients see the change; files never seen before become new documents."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    refuse_unencodable(folder_name, where="folder name")
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

    new_docs: list[tuple[str, str]] = []
    changed: list[tuple[str, str]] = []
    added: list[str] = []  # doc ids of every new entry, sub-folders included
    paths = FolderPaths((entry.path, entry.type) for entry in existing.values())
    with folder_room.transact():
        for path in folders:
            if path not in existing and _admitted(paths, path, "folder", report):
                uuid = str(uuidlib.uuid4())
                folderdoc.add_entry(folder_room.doc, path=path, uuid=uuid, type="folder")
                added.append(content_doc_id(folder, uuid))
                report.folders += 1
        for path, text in files.items():
            entry = existing.get(path)
            if entry is None:
                if not _admitted(paths, path, "markdown", report):
                    continue
                uuid = str(uuidlib.uuid4())
                folderdoc.add_entry(folder_room.doc, path=path, uuid=uuid, type="markdown")
                new_docs.append((content_doc_id(folder, uuid), text))
                added.append(content_doc_id(folder, uuid))
            elif entry.type != "markdown":
                report.skipped.append(f"{path} (a {entry.type} entry already has this path)")
            else:
                changed.append((content_doc_id(folder, entry.uuid), text))
    # Content first, then the folder entries that name it, so no client sees an entry without content.
    # The importer holds the texts: the search index reads them from here, not back from the database.
    text_cache(store).prime(dict(new_docs))
    # No await may come before this call: the store's one database thread then writes the content
    # before the folder document's update that names it.
    await store.db(_write_new_documents, folder=folder, new_docs=new_docs, writer=store.writer)
    report.created = len(new_docs)
    if added:
        await folder_room.flushed()
        # The change set the folder's mirroring going (rows, path index, search index): wait for it
        # rather than doing it twice, and do it here only if it left an entry without its row.
        await mirror_for(store).settled()
        if await store.db(_unmirrored, folder, added):
            await mirror_folder(store, folder_id=folder.pk, room=folder_room)

    # Unchanged files cost a hash comparison; only changed ones go through a live room, so connected
    # clients see the re-import as an edit.
    to_edit = await store.db(_stored_changes, dict(changed))
    report.unchanged = len(changed) - len(to_edit)
    for doc_id, text in to_edit.items():
        await store.db(persistence.create_ydoc, doc_id, YDoc.Kind.CONTENT)
        room = await store.get(doc_id)
        assert room is not None
        if replace_text(room.doc, text):
            report.updated += 1
            await room.flushed()
        else:
            report.unchanged += 1
    return report


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
    rows = Document.objects.filter(folder=folder).values_list("path", "uuid", "type")
    return {path: FileEntry(path=path, uuid=uuid, type=kind) for path, uuid, kind in rows}


def _unmirrored(folder: Folder, doc_ids: list[str]) -> bool:
    mirrored = 0
    for start in range(0, len(doc_ids), 500):
        chunk = doc_ids[start : start + 500]
        mirrored += Document.objects.filter(folder=folder, doc_id__in=chunk).count()
    return mirrored < len(doc_ids)


def _get_or_create_folder(name: str) -> Folder:
    folder = Folder.objects.filter(name=name).first()
    return folder if folder is not None else folder_create(name=name)


@dataclass
class ExportReport:
    files: int = 0
    folders: int = 0


def export_vault(*, folder: Folder, target: Path) -> ExportReport:
    """Write every markdown document and sub-folder of `folder` under `target`."""
    report = ExportReport()
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    for document in Document.objects.filter(folder=folder).order_by("path"):
        destination = (root / document.path.lstrip("/")).resolve()
        if root not in destination.parents:
            raise InvalidPath(f"{document.path} would be written outside {root}")
        if document.type == "folder":
            destination.mkdir(parents=True, exist_ok=True)
            report.folders += 1
            continue
        if document.type != "markdown":
            continue
        text = persistence.stored_text(document.doc_id) or ""
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(text.encode("utf-8"))
        report.files += 1
    return report
