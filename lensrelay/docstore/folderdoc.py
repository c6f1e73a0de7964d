"""Reading and writing a folder document (Relay's `filemeta_v0`, legacy `docs`, `backlinks_v0`, config).

Call the writers inside `Room.transact()` so the change is persisted and broadcast.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pycrdt import Array, Doc, Map

FILEMETA = "filemeta_v0"
LEGACY_DOCS = "docs"
BACKLINKS = "backlinks_v0"
CONFIG = "folder_config"

FILE_TYPES = frozenset({"folder", "markdown", "canvas", "image", "pdf", "audio", "video", "base", "file"})
SHA256_HEX = re.compile(r"[0-9a-f]{64}")  # fullmatch only: `$` accepts a trailing newline


@dataclass(frozen=True)
class FileEntry:
    path: str  # folder-relative, leading slash
    uuid: str
    type: str
    hash: str = ""  # the sha256 of the blob holding a file's content (lensrelay.files); "" for Y.Text


def maps(doc: Doc) -> tuple[Map, Map, Map, Map]:
    return (
        doc.get(FILEMETA, type=Map),
        doc.get(LEGACY_DOCS, type=Map),
        doc.get(BACKLINKS, type=Map),
        doc.get(CONFIG, type=Map),
    )


def init_folder_doc(doc: Doc, *, name: str) -> None:
    _, _, _, config = maps(doc)
    config["name"] = name


def entries(doc: Doc) -> dict[str, FileEntry]:
    """Every well-formed `filemeta_v0` entry; malformed ones (no id, wrong shape) are ignored."""
    filemeta = doc.get(FILEMETA, type=Map)
    result: dict[str, FileEntry] = {}
    for path, value in filemeta.items():
        meta = _plain(value)
        if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
            continue
        kind = meta.get("type") if meta.get("type") in FILE_TYPES else "file"
        digest = meta.get("hash")
        digest = digest if isinstance(digest, str) and SHA256_HEX.fullmatch(digest) else ""
        result[path] = FileEntry(path=path, uuid=meta["id"], type=str(kind), hash=digest)
    return result


def add_entry(doc: Doc, *, path: str, uuid: str, type: str = "markdown") -> None:
    filemeta, legacy, _, _ = maps(doc)
    filemeta[path] = {"id": uuid, "type": type, "version": 0}
    if type != "folder":
        legacy[path] = uuid


def parent_paths(path: str) -> list[str]:
    """The sub-folders a path sits in, outermost first: "/A/B/c.md" -> ["/A", "/A/B"]."""
    parts = path.split("/")[1:-1]
    return ["/" + "/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]


def add_folder_entries(doc: Doc, *, paths: Iterable[str]) -> None:
    """Sub-folder entries (`"/Notes": {"id", "type": "folder", "version": 0}`), as Relay clients make."""
    for path in paths:
        add_entry(doc, path=path, uuid=str(uuidlib.uuid4()), type="folder")


def entry_meta(doc: Doc, *, path: str) -> dict[str, Any]:
    """An entry's `filemeta_v0` value as a plain dict (id, type, version and whatever else it holds)."""
    meta: dict[str, Any] = _plain(doc.get(FILEMETA, type=Map)[path])
    return meta


def put_entry(doc: Doc, *, path: str, meta: dict[str, Any]) -> None:
    """Add an entry with a `filemeta_v0` value taken elsewhere, keeping its id, type and version."""
    filemeta, legacy, _, _ = maps(doc)
    filemeta[path] = meta
    if meta.get("type") != "folder" and isinstance(meta.get("id"), str):
        legacy[path] = meta["id"]


def move_entry(doc: Doc, *, old: str, new: str) -> None:
    filemeta, legacy, _, _ = maps(doc)
    meta = _plain(filemeta[old])
    del filemeta[old]
    filemeta[new] = meta
    if old in legacy:
        uuid = legacy[old]
        del legacy[old]
        legacy[new] = uuid


def remove_entry(doc: Doc, *, path: str) -> None:
    filemeta, legacy, _, _ = maps(doc)
    if path in filemeta:
        del filemeta[path]
    if path in legacy:
        del legacy[path]


def backlinks(doc: Doc) -> dict[str, list[str]]:
    raw = doc.get(BACKLINKS, type=Map)
    return {target: [str(s) for s in _plain(sources) or []] for target, sources in raw.items()}


def backlinks_of(doc: Doc, *, target: str) -> list[str]:
    """One target's sources, without reading the rest of the map."""
    return [str(s) for s in _plain(doc.get(BACKLINKS, type=Map).get(target)) or []]


def set_backlinks(doc: Doc, *, target: str, sources: list[str]) -> None:
    raw = doc.get(BACKLINKS, type=Map)
    if sources:
        raw[target] = sorted(sources)
    elif target in raw:
        del raw[target]


def _plain(value: Any) -> Any:
    if isinstance(value, Map):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Array):
        return [_plain(v) for v in value]
    return value
