"""Attachments (images, PDFs, any file that is not a note) both ways.

On the server an attachment is an entry of the folder document naming the sha256 of its bytes, which the
server stores as a blob (the file routes Relay clients use: `/f/<doc>/upload-url`, `/download-url`). At every
scan each path is looked at with three hashes: the file's (L), the entry's (R) and the one both sides held at
the last sync (B, in the state file):

    L == R            in sync
    L == B, R != B    changed on the server: the bytes are downloaded and written whole (or the file removed)
    R == B, L != B    changed on disk: the bytes are uploaded and the entry set (or the entry removed, which
                      puts the file in the folder's trash on the server)
    both changed      the newer wins (the file's mtime against the entry's `synctime`); the other is kept in
                      a trash: the server's version in the folder's trash, the file in `.trash/` of the
                      directory (Obsidian's own trash folder; a dot-name, never mirrored)

Transfers run as tasks, one per path at a time, so notes keep syncing while a big file moves. A file is
uploaded only once it stayed the same for one scan (a file still being copied is not sent half-way). A file
the server refuses (too big, a name it refuses, a token that may not upload) is said once and not sent again
until it changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import mimetypes
import os
import time
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pycrdt import Map

from lensrelay.text.vaultpath import InvalidPath
from lensrelay_sync.files import Signature, signature, write_file
from lensrelay_sync.paths import Refused, on_disk
from lensrelay_sync.server import ServerError

if TYPE_CHECKING:
    from lensrelay_sync.mirror import Mirror

logger = logging.getLogger("lensrelay_sync")

# The folder's `filemeta_v0` types of Relay clients, by extension (the server's `lensrelay.files.kinds`, which
# this client may not import: it keeps Django out).
_TYPES: dict[str, str] = {
    "canvas": "canvas",
    "pdf": "pdf",
    **dict.fromkeys(
        ("png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "ico", "tif", "tiff", "heic"), "image"
    ),
    **dict.fromkeys(("mp3", "wav", "m4a", "3gp", "flac", "ogg", "oga", "opus", "aac"), "audio"),
    **dict.fromkeys(("mp4", "webm", "ogv", "mov", "mkv", "m4v"), "video"),
}
_MIMETYPES = {"canvas": "application/json", "base": "text/yaml"}
# Kept by the server as live text documents, not blobs: not mirrored (yet).
LIVE_TEXT = frozenset({"markdown", "html", "htm"})
# Files that are being written by someone else under a name they will lose (downloads, editors' backups).
_PARTIAL = (".part", ".crdownload", ".tmp", ".swp", "~")
# More attachments than this (and than half of them) vanishing at once are written back, not deleted.
MASS_DELETE = 20
MISSING_SCANS = 2
TRASH_DIR = ".trash"


def extension(name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    return ext.lower() if dot and stem else ""


def kind_of(path: str) -> str:
    return _TYPES.get(extension(path.rsplit("/", 1)[-1]), "file")


def mimetype(path: str) -> str:
    ext = extension(path.rsplit("/", 1)[-1])
    if ext in _MIMETYPES:
        return _MIMETYPES[ext]
    guessed, _ = mimetypes.guess_type("x." + ext) if ext else (None, None)
    return guessed or "application/octet-stream"


def is_attachment(name: str) -> bool:
    """A file on disk mirrored as an attachment (the caller has left out notes and dot-names)."""
    return extension(name) not in LIVE_TEXT and not name.lower().endswith(_PARTIAL)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for chunk in iter(lambda: source.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Local:
    sig: Signature
    hash: str


@dataclass(frozen=True)
class Remote:
    uuid: str
    hash: str
    synctime: float  # seconds since the epoch (0 when the entry does not say)
    meta: dict[str, Any]


class Attachments:
    """The attachments of one mirror: what both sides held at the last sync, and the transfers under way."""

    def __init__(self, mirror: Mirror, base: dict[str, dict[str, str]]) -> None:
        self.mirror = mirror
        self.base = base  # path -> {"id": uuid, "hash": sha256} both sides held at the last sync
        self._hashes: dict[str, Local] = {}  # the scan's cache: a file is hashed again only when it changed
        self._seen: dict[str, Signature] = {}  # the signatures of the previous scan
        self._busy: set[str] = set()
        self._refused: dict[str, str] = {}  # path -> the hash the server refused (not sent again)
        self._unfetched: dict[str, str] = {}  # path -> the entry's hash that could not be downloaded
        self._missing: dict[str, int] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ reading both sides

    def hash_of(self, path: str, target: Path, sig: Signature) -> Local | None:
        """The file's hash, cached while its signature is unchanged (called from the scan's thread)."""
        cached = self._hashes.get(path)
        if cached is not None and cached.sig == sig:
            return cached
        try:
            found = Local(sig, sha256_file(target))
        except OSError:
            return None
        if signature(target) != sig:
            return None  # written while read: the next scan looks again
        if len(self._hashes) > 100_000:
            self._hashes.clear()
        self._hashes[path] = found
        return found

    def remote(self) -> dict[str, Remote]:
        found: dict[str, Remote] = {}
        for path, meta in self.mirror._tree().mirrored:
            uid, digest = meta.get("id"), meta.get("hash")
            if (
                not isinstance(uid, str)
                or not isinstance(digest, str)
                or meta.get("type") in {"folder", "markdown"}
            ):
                continue
            synctime = meta.get("synctime")
            when = float(synctime) / 1000 if isinstance(synctime, int | float) else 0.0
            found[path] = Remote(uid, digest, when, dict(meta))
        return found

    @property
    def settled(self) -> bool:
        return not self._busy

    # ------------------------------------------------------------------ one scan

    def reconcile(self, local: dict[str, Local]) -> None:
        mirror = self.mirror
        remote = self.remote()
        first = mirror.steps == 1
        self._server_renames(local, remote)
        if mirror.writable:
            self._local_renames(local, remote)
        gone = [
            path
            for path, base in self.base.items()
            if path not in local and path not in self._busy and remote.get(path, None) is not None
            and remote[path].hash == base["hash"]
        ]  # fmt: skip
        for path in list(self._missing):
            if path not in gone:
                del self._missing[path]
        for path in gone:
            self._missing[path] = self._missing.get(path, 0) + 1
        mass = len(gone) > max(MASS_DELETE, len(self.base) // 2)
        if mass:
            mirror.say(
                "mass delete attachments",
                f"{len(gone)} attachments vanished from {mirror.root} at once: they are written back, not "
                "deleted on the server",
            )
        for path in sorted(set(local) | set(remote) | set(self.base)):
            if path in self._busy:
                continue
            here, there, base = local.get(path), remote.get(path), self.base.get(path)
            l_hash = here.hash if here else None
            r_hash = there.hash if there else None
            b_hash = base["hash"] if base else None
            if l_hash == r_hash:
                if there is not None and (base is None or base != {"id": there.uuid, "hash": there.hash}):
                    self._set_base(path, there.uuid, there.hash)
                elif there is None and base is not None:
                    self._drop_base(path)
                continue
            if here is not None and self._seen.get(path) != here.sig and not first:
                continue  # still being written: looked at again at the next scan
            if self._refused.get(path) == l_hash and l_hash is not None:
                continue
            if r_hash is not None and self._unfetched.get(path) == r_hash:
                continue  # said once; tried again when the entry changes (or at the next start)
            if b_hash is not None and l_hash == b_hash:  # changed on the server only
                if there is None:
                    self._remove_local(path, here)
                else:
                    self._download(path, there, here)
            elif b_hash is not None and r_hash == b_hash:  # changed on disk only
                if here is None:
                    if self._missing.get(path, 0) < MISSING_SCANS and not first:
                        continue
                    if mass or not mirror.writable:
                        if not mirror.writable:
                            mirror.say(f"read-only {path}", mirror._read_only_message(f"{path} was put back"))
                        assert there is not None
                        self._download(path, there, None)
                    else:
                        self._remove_remote(path)
                elif not mirror.writable:
                    mirror.say(
                        f"read-only {path}",
                        mirror._read_only_message(f"{path} was put back; yours is in {TRASH_DIR}/"),
                    )
                    assert there is not None
                    self._download(path, there, here, keep_local=True)
                else:
                    self._upload(path, here, there)
            elif here is None:  # new on the server, or deleted here while changed there: the change wins
                assert there is not None
                self._download(path, there, None)
            elif there is None:  # new here, or deleted there while changed here
                if not mirror.writable:
                    mirror.say(
                        f"read-only {path}",
                        mirror._read_only_message(f"the new file {path} stays on this disk"),
                    )
                    continue
                self._upload(path, here, None)
            else:  # changed on both sides (or met for the first time with other bytes): the newer wins
                if here.sig.mtime_ns / 1e9 > there.synctime and mirror.writable:
                    logger.warning(
                        "%s changed here and on the server: yours is newer and wins; the server's is in the "
                        "folder's trash",
                        path,
                    )
                    self._remove_remote(path)
                    self._upload(path, here, None)
                else:
                    logger.warning(
                        "%s changed here and on the server: the server's is newer and wins; yours is in %s/",
                        path,
                        TRASH_DIR,
                    )
                    self._download(path, there, here, keep_local=True)
        self._seen = {path: found.sig for path, found in local.items()}

    def _set_base(self, path: str, uid: str, digest: str) -> None:
        self.base[path] = {"id": uid, "hash": digest}
        self.mirror._state_dirty = True

    def _drop_base(self, path: str) -> None:
        self.base.pop(path, None)
        self.mirror._state_dirty = True

    def _spawn(self, path: str, work: Any) -> None:
        self._busy.add(path)

        async def run() -> None:
            try:
                await work
            finally:
                self._busy.discard(path)
                self.mirror._wake.set()

        task = asyncio.get_running_loop().create_task(run())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # ------------------------------------------------------------------ renames

    def _server_renames(self, local: dict[str, Local], remote: dict[str, Remote]) -> None:
        """An entry that kept its id under a new path: the file is renamed (when it is the last synced)."""
        by_uuid = {entry.uuid: path for path, entry in remote.items()}
        for old, base in list(self.base.items()):
            new = by_uuid.get(base["id"])
            found = local.get(old)
            if (
                new is None
                or new == old
                or old in remote
                or new in local
                or found is None
                or old in self._busy
            ):
                continue
            if found.hash != base["hash"]:
                continue  # changed here meanwhile: the three-way rules decide
            try:
                source, target = on_disk(self.mirror.root, old), on_disk(self.mirror.root, new)
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.exists():
                    continue
                os.rename(source, target)
            except (Refused, OSError) as exc:
                self.mirror.say(f"rename {new}", f"cannot move {old} to {new}: {exc}")
                continue
            self.base[new] = self.base.pop(old)
            local[new] = Local(signature(target) or found.sig, found.hash)
            del local[old]
            self._seen[new] = local[new].sig
            self.mirror._state_dirty = True
            logger.info("moved %s -> %s", old, new)

    def _local_renames(self, local: dict[str, Local], remote: dict[str, Remote]) -> None:
        """A new file holding exactly the bytes of one that vanished is that file, moved: its entry moves."""
        vanished = {
            base["hash"]: path
            for path, base in self.base.items()
            if path not in local and path in remote and remote[path].hash == base["hash"]
        }
        for new in [path for path in local if path not in self.base and path not in remote]:
            old = vanished.pop(local[new].hash, None)
            if old is None:
                continue
            try:
                self.mirror._paths().check(new, type=kind_of(new), replacing=old)
            except InvalidPath as exc:
                self._refuse(new, local[new].hash, f"refused: {exc}")
                continue
            meta = remote[old].meta

            def move(
                filemeta: Map, legacy: Map, old: str = old, new: str = new, meta: dict[str, Any] = meta
            ) -> None:
                self.mirror._add_parents(filemeta, new)
                for keyed in (filemeta, legacy):
                    if old in keyed:
                        del keyed[old]
                filemeta[new] = meta
                legacy[new] = meta["id"]

            self.mirror._edit_tree(move)
            remote[new] = remote.pop(old)
            self.base[new] = self.base.pop(old)
            self.mirror._state_dirty = True
            logger.info("moved %s -> %s", old, new)

    # ------------------------------------------------------------------ the four moves

    def _refuse(self, path: str, digest: str, message: str) -> None:
        self._refused[path] = digest
        self.mirror.say(f"refused {path} {digest}", message)

    def _remove_local(self, path: str, here: Local | None) -> None:
        try:
            target = on_disk(self.mirror.root, path)
        except Refused as exc:
            self.mirror.say(f"target {path}", f"not removed: {exc}")
            return
        if here is not None and signature(target) == here.sig:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            logger.info("deleted %s (deleted on the server: it is in the folder's trash there)", path)
        self._drop_base(path)

    def _remove_remote(self, path: str) -> None:
        def delete(filemeta: Map, legacy: Map) -> None:
            for keyed in (filemeta, legacy):
                if path in keyed:
                    del keyed[path]

        self.mirror._edit_tree(delete)
        self._drop_base(path)
        logger.info("deleted %s (it goes to the folder's trash on the server)", path)

    def _keep_in_trash(self, path: str, target: Path) -> None:
        """Move the file that lost a conflict into `.trash/` of the directory (a free name there)."""
        trash = self.mirror.root / TRASH_DIR
        if trash.is_symlink():
            raise OSError(f"{trash} is a symbolic link")
        aside = trash.joinpath(*path[1:].split("/"))
        stem, dot, ext = aside.name.rpartition(".")
        count = 1
        while aside.exists():
            count += 1
            aside = aside.with_name(f"{stem} {count}{dot}{ext}" if stem else f"{aside.name} {count}")
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.rename(target, aside)

    def _download(self, path: str, there: Remote, here: Local | None, *, keep_local: bool = False) -> None:
        mirror = self.mirror
        try:
            target = on_disk(mirror.root, path)
        except Refused as exc:
            mirror.say(f"target {path}", f"not written: {exc}")
            return

        async def work() -> None:
            doc_id = mirror.folder.note_doc_id(there.uuid)
            try:
                data = await asyncio.to_thread(mirror.server.download, doc_id=doc_id, digest=there.hash)
            except ServerError as exc:
                if not str(exc).startswith("cannot reach"):  # an answer, not an outage: not asked again
                    self._unfetched[path] = there.hash
                mirror.say(f"download {path} {there.hash}", f"{path}: not downloaded: {exc}")
                return
            if hashlib.sha256(data).hexdigest() != there.hash:
                self._unfetched[path] = there.hash
                mirror.say(
                    f"download {path} {there.hash}", f"{path}: the bytes served do not match the entry"
                )
                return
            expect = here.sig if here is not None else None
            if signature(target) != expect:
                return  # saved here meanwhile: the next scan decides again
            if keep_local and here is not None:
                try:
                    self._keep_in_trash(path, target)
                except OSError as exc:
                    mirror.say(f"trash {path}", f"{path}: not replaced, it could not be kept aside: {exc}")
                    return
                expect = None
            if write_file(target, data, expect=expect, create=True) is None:
                return
            self._set_base(path, there.uuid, there.hash)
            logger.info("wrote %s (%d bytes)", path, len(data))

        self._spawn(path, work())

    def _upload(self, path: str, here: Local, there: Remote | None) -> None:
        mirror = self.mirror
        if there is None:
            try:
                mirror._paths().check(path, type=kind_of(path))
            except InvalidPath as exc:
                self._refuse(path, here.hash, f"refused: {exc}")
                return
        uid = there.uuid if there is not None else str(uuidlib.uuid4())
        try:
            target = on_disk(mirror.root, path)
        except Refused as exc:
            self._refuse(path, here.hash, f"refused: {exc}")
            return

        async def work() -> None:
            try:
                data = await asyncio.to_thread(target.read_bytes)
            except OSError:
                return
            digest = hashlib.sha256(data).hexdigest()
            if digest != here.hash:
                return  # changed since the scan: the next scan sends the new bytes
            try:
                await asyncio.to_thread(
                    mirror.server.upload,
                    doc_id=mirror.folder.note_doc_id(uid),
                    digest=digest,
                    data=data,
                    content_type=mimetype(path),
                )
            except ServerError as exc:
                self._refuse(path, digest, f"{path}: not uploaded ({len(data)} bytes): {exc}")
                return
            now = mirror._filemeta().get(path)
            if there is None and now is not None:
                self.mirror.say(f"taken {path}", f"{path}: the server has a new file of that name; next scan")
                return
            if there is not None and not (isinstance(now, dict) and now.get("id") == uid):
                return  # moved or deleted on the server meanwhile: the next scan decides again
            meta = {
                **(dict(now) if isinstance(now, dict) else {"id": uid, "type": kind_of(path), "version": 0}),
                "hash": digest,
                "mimetype": mimetype(path),
                "synctime": int(time.time() * 1000),
            }

            def put(filemeta: Map, legacy: Map) -> None:
                mirror._add_parents(filemeta, path)
                filemeta[path] = meta
                legacy[path] = uid

            mirror._edit_tree(put)
            self._set_base(path, uid, digest)
            logger.info("%s %s (%d bytes)", "created" if there is None else "uploaded", path, len(data))

        self._spawn(path, work())
