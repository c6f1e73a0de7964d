"""The trash inside a folder document: deleted entries live on under `/_trash/<original path>`.

As lens-relay does, a delete moves `filemeta_v0` (and `docs`) entries under `/_trash/`, stamped with
`trashed_at` (unix ms); the entry keeps its id, so the content document, its history and its blobs stay,
and restoring is a move back out. Only the doc-level writes live here (no database, no services), so the
folder mirror can use them to put back an entry a client removed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pycrdt import Doc

from lensrelay.docstore import folderdoc
from lensrelay.docstore.folderdoc import FileEntry
from lensrelay.text.vaultpath import TRASH as TRASH  # re-exported: where the trash is
from lensrelay.text.vaultpath import is_canonical_trash

TRASHED_AT = "trashed_at"
# Set only when the entry could not go to `/_trash/<original path>` (something was trashed there before).
TRASHED_FROM = "trashed_from"


def is_trashed(path: str) -> bool:
    """Whether a folder-relative path is the trash or inside it, as the trash service spells it. No other
    spelling (``/_TRASH``, ``/_Trash``, fullwidth, ...) ever gets in: every way in refuses it (see
    `lensrelay.text.vaultpath.names_trash`), and the folder-document mirror ignores such entries."""
    return is_canonical_trash(path)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Trashed:
    """An entry in the trash: where it is, where it came from, and when it was trashed (None: unknown)."""

    path: str
    original: str
    uuid: str
    type: str
    trashed_at: int | None


def trashed_entries(doc: Doc) -> dict[str, Trashed]:
    """Every well-formed entry under `/_trash/`, by its path in the trash."""
    found: dict[str, Trashed] = {}
    for path, entry in folderdoc.entries(doc).items():
        if not is_trashed(path) or path == TRASH:
            continue
        meta = folderdoc.entry_meta(doc, path=path)
        stamp = meta.get(TRASHED_AT)
        source = meta.get(TRASHED_FROM)
        original = source if isinstance(source, str) and source.startswith("/") else path[len(TRASH) :]
        found[path] = Trashed(
            path=path,
            original=original,
            uuid=entry.uuid,
            type=entry.type,
            # A Yjs number: written as an int, read back (and sent by JS clients) as a float.
            trashed_at=int(stamp) if isinstance(stamp, int | float) and not isinstance(stamp, bool) else None,
        )
    return found


def subtree(entries: Mapping[str, FileEntry], path: str) -> list[str]:
    """The path and every entry under it (a sub-folder's contents), as they are in `entries`."""
    return [p for p in entries if p == path or p.startswith(path + "/")]


def trash_destinations(entries: Mapping[str, FileEntry], paths: Iterable[str], stamp: int) -> dict[str, str]:
    """Where each of `paths` (whole subtrees, none of them trashed) goes: `/_trash/<path>`, or when
    anything of a subtree would land on an earlier trashed entry, `/_trash/<stamp>/<path>` for all of it."""
    moves: dict[str, str] = {}
    roots = sorted(set(paths), key=len)
    for root in roots:
        if any(root.startswith(done + "/") for done in moves):
            continue  # inside a sub-folder trashed with it
        members = [p for p in subtree(entries, root) if not is_trashed(p)] or [root]
        base = TRASH
        if any(TRASH + p in entries for p in members):
            base = f"{TRASH}/{stamp}"
            while any(base + p in entries for p in members):
                stamp += 1
                base = f"{TRASH}/{stamp}"
        for member in members:
            moves[member] = base + member
    return moves


def _add_parents(doc: Doc, present: Mapping[str, FileEntry], arriving: set[str]) -> None:
    """Sub-folder entries for every folder the arriving paths sit in, as Relay clients expect."""
    missing = {
        parent
        for new in arriving
        for parent in folderdoc.parent_paths(new)
        if parent not in present and parent not in arriving
    }
    folderdoc.add_folder_entries(doc, paths=sorted(missing))


def move_to_trash(doc: Doc, moves: Mapping[str, str], stamp: int) -> None:
    """Move entries (old path -> trash path) keeping their values, stamped; call inside a transaction.

    Sub-folders on the way get entries, as Relay clients expect; the entries' uuids also leave
    `backlinks_v0` (as targets and as sources): a trashed note links nowhere and nothing links to it.
    """
    present = folderdoc.entries(doc)
    _add_parents(doc, present, set(moves.values()))
    uuids: set[str] = set()
    for old, new in moves.items():
        meta: dict[str, Any] = folderdoc.entry_meta(doc, path=old) if old in present else {}
        meta[TRASHED_AT] = stamp
        if new != TRASH + old:
            meta[TRASHED_FROM] = old
        folderdoc.remove_entry(doc, path=old)
        folderdoc.put_entry(doc, path=new, meta=meta)
        if isinstance(meta.get("id"), str):
            uuids.add(meta["id"])
    forget_links(doc, uuids)


def put_back_in_trash(doc: Doc, lost: Iterable[FileEntry], stamp: int) -> dict[str, str]:
    """Re-add entries a client removed (known only from their rows) under `/_trash/`; returns
    old path -> trash path. Entries already in the trash go back where they were."""
    present = folderdoc.entries(doc)
    lost = list(lost)
    outside = {e.path: e for e in lost if not is_trashed(e.path)}
    targets = trash_destinations({**present, **outside}, list(outside), stamp) if outside else {}
    placed: dict[str, str] = {}
    _add_parents(doc, present, set(targets.values()) | {e.path for e in lost if is_trashed(e.path)})
    for entry in lost:
        new = targets.get(entry.path, entry.path)
        meta: dict[str, Any] = {"id": entry.uuid, "type": entry.type, "version": 0, TRASHED_AT: stamp}
        if entry.hash:
            meta["hash"] = entry.hash  # the blob a Relay client fetches the file by
        if new != entry.path and new != TRASH + entry.path:
            meta[TRASHED_FROM] = entry.path
        folderdoc.put_entry(doc, path=new, meta=meta)
        placed[entry.path] = new
    return placed


def take_out_of_trash(doc: Doc, moves: Mapping[str, str], new_folders: Iterable[str]) -> None:
    """Move entries out of the trash (trash path -> restored path), dropping the trash stamps."""
    folderdoc.add_folder_entries(doc, paths=new_folders)
    for old, new in moves.items():
        meta = folderdoc.entry_meta(doc, path=old)
        meta.pop(TRASHED_AT, None)
        meta.pop(TRASHED_FROM, None)
        folderdoc.remove_entry(doc, path=old)
        folderdoc.put_entry(doc, path=new, meta=meta)


def forget_links(doc: Doc, uuids: set[str]) -> None:
    """Take these uuids out of `backlinks_v0`, as targets and as sources."""
    if not uuids:
        return
    for target, sources in folderdoc.backlinks(doc).items():
        if target in uuids:
            folderdoc.set_backlinks(doc, target=target, sources=[])
        elif uuids.intersection(sources):
            folderdoc.set_backlinks(doc, target=target, sources=[s for s in sources if s not in uuids])


def empty_trash_folders(doc: Doc) -> list[str]:
    """Sub-folder entries under `/_trash/` (and `/_trash` itself) holding nothing but other sub-folders."""
    present = folderdoc.entries(doc)
    return [
        path
        for path, entry in present.items()
        if is_trashed(path)
        and entry.type == "folder"
        and all(other.type == "folder" for p, other in present.items() if p.startswith(path + "/"))
    ]
