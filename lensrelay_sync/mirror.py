"""The mirror: one Lens Relay folder and one directory kept equal, both ways, live.

One loop does everything, in steps: every `interval` (200 ms) and at once when the server sends a change.
A step reads the folder document's tree (notes, sub-folders), scans the directory (names, sizes, times),
carries creates, renames and deletes across, then syncs every note that changed on either side:

    F = the file's text, D = the document's text, B = the text both held at the last sync (the base)
    F != B  -> the change B -> F is carried onto D as the smallest edit (`textmerge.rebase`), so what
               changed on the server meanwhile stays; the file is then rewritten with the merged text
    F == B  -> D is written to the file (whole-or-nothing: a temporary file, then a rename)

A file saved between our read and our write is never overwritten: the write is skipped and the next step
merges that save first. The token decides whether local changes go up: a read-only token's change is
refused, said once, and the file put back.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pycrdt import Map

from lensrelay.text.vaultpath import FolderPaths, InvalidPath
from lensrelay_sync.attachments import Attachments, Local, is_attachment
from lensrelay_sync.files import NotText, Signature, read_note, signature, write_note
from lensrelay_sync.link import DocLink, apply_ops
from lensrelay_sync.paths import Refused, check_local, check_remote, folder_path, is_hidden, is_note, on_disk
from lensrelay_sync.proposing import propose, proposed_text
from lensrelay_sync.server import Folder, Server, ServerError
from lensrelay_sync.state import State, write_state
from lensrelay_sync.textmerge import base_of_save, rebase

logger = logging.getLogger("lensrelay_sync")

FILEMETA = "filemeta_v0"
LEGACY_DOCS = "docs"
# A file gone from disk for this many scans is deleted (editors that delete then write leave a short gap).
MISSING_SCANS = 2
# More notes than this (and than half the folder) gone from disk at once are written back, not deleted.
MASS_DELETE = 20
# The files of notes changed in the last HOT_FOR seconds are looked at every HOT_EVERY seconds, so a person
# working on a note is synced at once whatever the size of the directory.
HOT_EVERY = 0.05
HOT_FOR = 600.0
HOT_MAX = 200
SYNC_TIMEOUT = 30.0
# A note created a moment ago may be unknown to the server until the folder's update has been applied.
NEW_NOTE_GRACE = 10.0
# How long after our write a save is looked at as possibly made from the text before it (an editor that had
# not reloaded yet): a person takes longer than this to see the new text and delete what it brought.
STALE_SAVE_WINDOW = 2.0
STATE_SAVE_EVERY = 1.0


@dataclass
class Note:
    uuid: str
    path: str  # folder-relative: "/Notes/Ideas.md"
    base: str | None  # the text file and document held at the last sync; None: never synced
    link: DocLink | None = None
    sig: Signature | None = None  # the file's signature when last read or written by us
    dirty: bool = True
    missing: int = 0  # consecutive scans without its file
    restore: bool = False  # gone from disk but to be written back (read-only token, mass delete)
    # The file's text our last write replaced, and when: an editor's save made from it comes soon after.
    replaced: str | None = None
    written_at: float = 0.0
    proposing: bool = False  # a save on its way to the server as suggestions (a `suggest` token)
    moved_from: str | None = None  # renamed on disk: the old path, until the server's tree shows the new


@dataclass
class Scan:
    files: dict[str, Signature] = field(default_factory=dict)  # folder-relative path -> signature
    dirs: set[str] = field(default_factory=set)
    blobs: dict[str, Local] = field(default_factory=dict)  # attachments: path -> signature and hash
    # Each directory (by its names' parts) as listed: its modification time, taken before the listing, and
    # the names in it. A name made, renamed or removed there since (an editor's save by rename too)
    # changes the time.
    listed: dict[tuple[str, ...], tuple[int, frozenset[str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Tree:
    version: int  # the folder document's version (`Mirror._tree_version`) it was read at
    mirrored: list[tuple[str, dict[str, Any]]]  # entries this client may mirror: path, value
    paths: FolderPaths  # every entry, for the path rules


class Mirror:
    def __init__(
        self,
        *,
        root: Path,
        server: Server,
        folder: Folder,
        writable: bool,
        suggests: bool = False,
        interval: float = 0.2,
        on_step: Callable[[], None] | None = None,
    ) -> None:
        self.root = root.resolve()
        self.server = server
        self.folder = folder
        self.writable = writable
        # A token that may not write live but may suggest: saves of notes become its suggestions.
        self.suggests = suggests and not writable
        self._proposals: set[asyncio.Task[None]] = set()
        # Renames made on disk, for the server to carry out with the links to them: note, old, new path.
        self._moves_to_send: list[tuple[Note, str, str]] = []
        self.interval = interval
        self.on_step = on_step
        self.state = State.load(self.root)
        self.state.check(server=server.url, folder_doc=folder.doc_id, root=self.root)
        self.notes: dict[str, Note] = {
            uid: Note(uid, entry["path"], entry["text"]) for uid, entry in self.state.notes.items()
        }
        self.known_folders: set[str] = set(self.state.folders)
        # Sub-folders removed on the server whose directory still held files then: removed once empty, and
        # never offered back as new sub-folders meanwhile.
        self._folders_leaving: set[str] = set()
        self.attachments = Attachments(self, self.state.files)
        self.folder_link: DocLink | None = None
        self._tree_cache: _Tree | None = None
        self._tree_version = 0  # bumped by every change of the folder document, from here or the server
        self._wake = asyncio.Event()
        self._tree_changed = True
        self._said: set[str] = set()
        self._state_dirty = True
        self._last_save = 0.0
        self._save_every = STATE_SAVE_EVERY
        self._scan_every = interval
        # A whole scan under way in a thread, and when it started: notes keep syncing meanwhile.
        self._scanning: asyncio.Future[Scan] | None = None
        self._saving: asyncio.Future[None] | None = None
        self._scan_started = 0.0
        self._listed: dict[tuple[str, ...], tuple[int, frozenset[str]]] = {}
        self._hot: dict[str, float] = {}  # uuid -> when the note last changed on either side
        self._checked: dict[str, str | None] = {}  # path -> why refused (None: fine), the scan's cache
        self.steps = 0

    # ------------------------------------------------------------------ running

    async def start(self) -> None:
        self.folder_link = self._link(self.folder.doc_id, "folder", tree=True)
        await self._synced(self.folder_link)

    async def run(self, stop: asyncio.Event | None = None, *, once: bool = False) -> None:
        """Reconcile, then mirror until ``stop`` is set (with ``once``: return after the first full sync)."""
        stop = stop or asyncio.Event()
        started = asyncio.get_running_loop().time()
        if self.folder_link is None:
            await self.start()
        try:
            await self.step()
            if once:
                await self._settle()
                return
            loop = asyncio.get_running_loop()
            next_scan = next_hot = loop.time()
            announced = False
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._wake.wait(), max(0.0, min(next_scan, next_hot) - loop.time())
                    )
                self._wake.clear()
                # A change from the server is written at once, without waiting for (or paying) a scan; the
                # notes being worked on are looked at every 50 ms, the whole directory every `_scan_every`.
                now = loop.time()
                scan, hot = now >= next_scan, now >= next_hot
                await self.step(scan=scan, hot=hot, background=True)
                if scan:
                    next_scan = loop.time() + self._scan_every
                if hot or scan:
                    next_hot = loop.time() + HOT_EVERY
                if not announced and self._settled():
                    announced = True
                    await self._save_state_now()
                    # What the first sync built (a Doc and a socket per note) stays: kept out of the
                    # collector's full passes, which over a 10,000-note folder's objects held the loop
                    # for most of a second now and then.
                    gc.collect()
                    gc.freeze()
                    files = len(self.attachments.base)
                    logger.info(
                        "in sync: %d notes and %d other files, %.1f s after the start",
                        sum(n.base is not None for n in self.notes.values()),
                        files,
                        loop.time() - started,
                    )
        finally:
            await self._save_state_now()

    async def close(self) -> None:
        for task in [*self.attachments.tasks, *self._proposals]:
            task.cancel()
        links = [n.link for n in self.notes.values() if n.link is not None]
        if self.folder_link is not None:
            links.append(self.folder_link)
        await asyncio.gather(*(link.stop() for link in links), return_exceptions=True)

    def _settled(self) -> bool:
        """Every note synced and written, every attachment moved, the tree applied."""
        return (
            not self._tree_changed
            and self._scanning is None
            and self.attachments.settled
            and not any(n.dirty and not (n.link is not None and n.link.closed) for n in self.notes.values())
        )

    async def _settle(self, timeout: float = SYNC_TIMEOUT) -> None:
        """Until every note is synced and written (for ``--once``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._settled():
            if loop.time() > deadline:
                raise TimeoutError(f"notes still not synced after {timeout:.0f} s")
            await asyncio.sleep(0.05)
            await self.step()
        await asyncio.sleep(0.3)  # the sockets' last updates leave

    def _link(self, doc_id: str, label: str, *, tree: bool = False, grace: float = 0.0) -> DocLink:
        def changed() -> None:
            if tree:
                self._tree_changed = True
                self._tree_version += 1
            else:
                note = self._note_by_doc(doc_id)
                if note is not None:
                    note.dirty = True
            self._wake.set()

        link = DocLink(
            ws_base=self.server.ws_base,
            doc_id=doc_id,
            token=self.server.token,
            on_change=changed,
            label=label,
            unknown_grace=grace,
            ping=tree,
            on_lost=self._folder_lost if tree else None,
        )
        link.start()
        return link

    def _folder_lost(self) -> None:
        """The folder's socket died: the notes' sockets (which do not ping) may have died with it."""
        for note in self.notes.values():
            if note.link is not None:
                note.link.reconnect()

    async def _synced(self, link: DocLink) -> None:
        waiter = asyncio.create_task(link.synced.wait())
        try:
            deadline = asyncio.get_running_loop().time() + SYNC_TIMEOUT
            while not waiter.done():
                if link.closed is not None:
                    raise link.closed
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"{link.label}: not synced within {SYNC_TIMEOUT:.0f} s")
                await asyncio.wait({waiter}, timeout=0.05)
        finally:
            waiter.cancel()

    def _note_by_doc(self, doc_id: str) -> Note | None:
        uid = doc_id[len(self.folder.relay_id) + 1 :]
        return self.notes.get(uid)

    def say(self, key: str, message: str) -> None:
        """Log a message once per ``key`` (a refused name is refused at every scan, said once)."""
        if key not in self._said:
            self._said.add(key)
            logger.warning("%s", message)

    # ------------------------------------------------------------------ one step

    async def step(self, *, scan: bool = True, hot: bool = False, background: bool = False) -> None:
        """One round: the server's tree, then (with ``scan``) the directory's, or (with ``hot``) the files of
        the notes changed lately, then every changed note. With ``background``, a whole scan runs in a thread
        while later rounds go on syncing notes (10,000 files take ~100 ms to scan), and is applied by the
        round that finds it done; the server's tree waits for it, so the scan never meets a tree this client
        changed on disk while it read."""
        self.steps += 1
        assert self.folder_link is not None
        if self.folder_link.closed is not None:
            raise self.folder_link.closed
        if self._tree_changed and self._scanning is None:
            self._tree_changed = False
            self._apply_remote_tree()
        if hot and not scan and self._scanning is None and self._look_at_changed_dirs():
            scan = True  # a note, sub-folder or file came or went: the whole scan now, not in a second
        if scan and self._scanning is None:
            self._scan_started = time.perf_counter()
            self._scanning = asyncio.ensure_future(asyncio.to_thread(self._scan))
            self._scanning.add_done_callback(lambda _: self._wake.set())
        if self._scanning is not None and (self._scanning.done() or not background):
            found = await self._scanning
            self._scanning = None
            # Scanning stays a small share of one core: a directory that takes 50 ms to scan is scanned
            # every 250 ms rather than every 200 (10,000 notes: about 40 ms on this project's machines).
            self._scan_every = max(self.interval, 5 * (time.perf_counter() - self._scan_started))
            self._listed = found.listed
            self._apply_local_tree(found)
            await self._send_moves()
            self.attachments.reconcile(found.blobs)
        elif hot:
            self._look_at_hot()
        for note in list(self.notes.values()):
            if note.dirty and note.link is not None and note.link.synced.is_set():
                self._sync_note(note)
                if self.steps > 1:  # not the first sync, where every note is "changed"
                    self._hot[note.uuid] = time.monotonic()
            elif note.link is not None and note.link.closed is not None:
                self.say(f"closed {note.uuid}", f"{note.path}: {note.link.closed}")
        if len(self._hot) > HOT_MAX:
            for uid, _ in sorted(self._hot.items(), key=lambda item: item[1])[: len(self._hot) - HOT_MAX]:
                del self._hot[uid]
        self._save_state_soon()
        if self.on_step is not None:
            self.on_step()

    # ------------------------------------------------------------------ the folder document

    def _filemeta(self) -> Map:
        assert self.folder_link is not None
        return self.folder_link.doc.get(FILEMETA, type=Map)

    def _tree(self) -> _Tree:
        """The folder's entries as of its document's state now, read again only once it changed: read
        whole, 10,000 entries cost ~50 ms of the loop at every scan."""
        if self._tree_cache is None or self._tree_cache.version != self._tree_version:
            items = [
                (path, value if isinstance(value, dict) else {}) for path, value in self._filemeta().items()
            ]
            mirrored = []
            for path, meta in items:
                try:
                    check_remote(path)
                except Refused as exc:
                    if not path.startswith("/_trash"):
                        self.say(f"remote {path}", f"not mirrored: {exc}")
                    continue
                mirrored.append((path, meta))
            paths = FolderPaths([(path, str(meta.get("type", "file"))) for path, meta in items])
            self._tree_cache = _Tree(self._tree_version, mirrored, paths)
        return self._tree_cache

    def _remote_entries(self) -> tuple[dict[str, str], set[str]]:
        """Notes (path -> uuid) and sub-folders of the folder, as this client mirrors them."""
        notes: dict[str, str] = {}
        folders: set[str] = set()
        for path, meta in self._tree().mirrored:
            kind, uid = meta.get("type"), meta.get("id")
            if not isinstance(uid, str):
                continue
            if kind == "folder":
                folders.add(path)
            elif kind == "markdown" and is_note(path.rsplit("/", 1)[-1]):
                notes[path] = uid
            elif not isinstance(meta.get("hash"), str):  # attachments (a hash) are `attachments.py`'s
                self.say(f"kind {path}", f"not mirrored: {path} ({kind}) is kept as live text on the server")
        return notes, folders

    def _edit_tree(self, change: Callable[[Map, Map], None]) -> None:
        assert self.folder_link is not None
        doc = self.folder_link.doc
        before = doc.get_state()
        filemeta, legacy = doc.get(FILEMETA, type=Map), doc.get(LEGACY_DOCS, type=Map)
        with doc.transaction():
            change(filemeta, legacy)
        self._tree_version += 1
        self.folder_link.send_since(before)

    def _paths(self) -> FolderPaths:
        return self._tree().paths

    def _apply_remote_tree(self) -> None:
        remote_notes, remote_folders = self._remote_entries()
        by_uuid = {uid: path for path, uid in remote_notes.items()}
        for folder in sorted(remote_folders):
            if folder not in self.known_folders:
                self._mkdir(folder)
                self.known_folders.add(folder)
                self._state_dirty = True
        for note in list(self.notes.values()):
            path = by_uuid.get(note.uuid)
            if path is None:
                if note.base is not None or note.link is not None:
                    self._remote_deleted(note)
            elif path == note.path:
                note.moved_from = None
            elif path != note.moved_from:  # else our own move, not shown by the server yet
                self._remote_moved(note, path)
            if note.uuid in self.notes and note.link is None:
                note.link = self._link(self.folder.note_doc_id(note.uuid), note.path)
        for path, uid in remote_notes.items():
            if uid not in self.notes:
                note = Note(uid, path, None)
                note.link = self._link(self.folder.note_doc_id(uid), path)
                self.notes[uid] = note
                self._state_dirty = True
        for folder in sorted(self.known_folders - remote_folders, reverse=True):
            self.known_folders.discard(folder)
            self._state_dirty = True
            self._folders_leaving.add(folder)
        self._folders_leaving -= remote_folders
        self._remove_leaving_folders()

    def _remove_leaving_folders(self) -> None:
        for folder in sorted(self._folders_leaving, reverse=True):
            if folder in self.known_folders:  # made again meanwhile (a note kept here was offered back)
                self._folders_leaving.discard(folder)
                continue
            try:
                on_disk(self.root, folder).rmdir()  # only when empty: files of its own keep it
            except FileNotFoundError:
                pass
            except (OSError, Refused):
                continue
            self._folders_leaving.discard(folder)

    def _mkdir(self, folder: str) -> None:
        try:
            target = on_disk(self.root, folder)
            target.mkdir(parents=True, exist_ok=True)
        except (Refused, OSError) as exc:
            self.say(f"mkdir {folder}", f"cannot make the directory {folder}: {exc}")

    def _remote_deleted(self, note: Note) -> None:
        """The note left the folder (deleted: it is in the server's trash). Its file goes too, unless it holds
        a change never synced: then it stays, and the next scan offers it as a new note (nothing lost)."""
        self.notes.pop(note.uuid, None)
        self._state_dirty = True
        if note.link is not None:
            asyncio.get_running_loop().create_task(note.link.stop())
        try:
            target = on_disk(self.root, note.path)
        except Refused:
            return
        found = self._read(note, target)
        if found is None:
            return
        text, _ = found
        if text == note.base:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            self._prune_dirs(note.path)
            logger.info("deleted %s (deleted on the server)", note.path)
        else:
            logger.warning("%s was deleted on the server but changed here: kept, and offered back", note.path)

    def _remote_moved(self, note: Note, path: str) -> None:
        try:
            old, new = on_disk(self.root, note.path), on_disk(self.root, path)
        except Refused as exc:
            self.say(f"move {path}", f"cannot move {note.path} to {path}: {exc}")
            return
        if old.exists() and not new.exists():
            new.parent.mkdir(parents=True, exist_ok=True)
            os.rename(old, new)
            note.sig = signature(new)
            self._prune_dirs(note.path)
            logger.info("moved %s -> %s (moved on the server)", note.path, path)
        note.path = path
        note.dirty = True
        self._state_dirty = True

    def _prune_dirs(self, path: str) -> None:
        """Remove the now-empty directories a note left, up to the first one the folder still has."""
        parts = path.split("/")[1:-1]
        while parts:
            folder = folder_path(parts)
            if folder in self.known_folders:
                return
            with contextlib.suppress(OSError, Refused):
                on_disk(self.root, folder).rmdir()
            parts.pop()

    # ------------------------------------------------------------------ the directory

    def _look_at_changed_dirs(self) -> bool:
        """The directories whose time changed since they were listed (a stat each, every 50 ms) are listed
        again: a note saved there by rename is marked at once, whatever the folder's size, and when names
        came or went there, True asks for a whole scan now."""
        by_path: dict[str, Note] | None = None
        for parts, (mtime, names) in list(self._listed.items()):
            directory = self.root.joinpath(*parts)
            try:
                now = os.stat(directory, follow_symlinks=False).st_mtime_ns
                if now == mtime:
                    continue
                entries = [e for e in os.scandir(directory) if not is_hidden(e.name)]
            except OSError:
                return True
            if frozenset(e.name for e in entries) != names:
                return True
            self._listed[parts] = (now, names)
            by_path = by_path if by_path is not None else {n.path: n for n in self.notes.values()}
            for entry in entries:
                note = by_path.get(folder_path([*parts, entry.name]))
                if note is None or note.dirty or note.base is None:
                    continue
                with contextlib.suppress(OSError):
                    if Signature.of(entry.stat(follow_symlinks=False)) != note.sig:
                        note.dirty = True
        return False

    def _look_at_hot(self) -> None:
        cold = time.monotonic() - HOT_FOR
        for uid, when in list(self._hot.items()):
            note = self.notes.get(uid)
            if note is None or when < cold:
                del self._hot[uid]
                continue
            if note.dirty or note.base is None:
                continue
            try:
                sig = signature(on_disk(self.root, note.path))
            except Refused:
                continue
            if sig is not None and sig != note.sig:
                note.dirty = True

    def _refusal(self, path: str) -> str | None:
        if path not in self._checked:
            if len(self._checked) > 100_000:
                self._checked.clear()
            try:
                check_local(path)
                self._checked[path] = None
            except Refused as exc:
                self._checked[path] = str(exc)
        return self._checked[path]

    def _scan(self) -> Scan:
        if not self.root.is_dir():
            raise FileNotFoundError(
                f"{self.root} is gone (moved, deleted or unmounted): stopping, nothing deleted"
            )
        scan = Scan()
        stack: list[tuple[Path, list[str]]] = [(self.root, [])]
        while stack:
            directory, parts = stack.pop()
            try:
                mtime = os.stat(directory, follow_symlinks=False).st_mtime_ns
                entries = [e for e in os.scandir(directory) if not is_hidden(e.name)]
            except OSError:
                continue
            scan.listed[tuple(parts)] = (mtime, frozenset(e.name for e in entries))
            for entry in entries:
                name = entry.name
                path = folder_path([*parts, name])
                if entry.is_symlink():
                    self.say(f"link {path}", f"{path} is a symbolic link: not mirrored")
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                blob = not is_dir and not is_note(name)
                if blob and not is_attachment(name):
                    # Said once in all: partial downloads and backups come and go under new names.
                    self.say(
                        "not mirrored",
                        f"not mirrored: {path} and any other file of its kind (HTML and other live text, "
                        "partial downloads, backups)",
                    )
                    continue
                refused = self._refusal(path)
                if refused is not None:
                    self.say(f"refused {path}", f"refused: {refused}")
                    continue
                if is_dir:
                    scan.dirs.add(path)
                    stack.append((Path(entry.path), [*parts, name]))
                elif blob:
                    try:
                        sig = Signature.of(entry.stat(follow_symlinks=False))
                    except OSError:
                        continue
                    found = self.attachments.hash_of(path, Path(entry.path), sig)
                    if found is not None:
                        scan.blobs[path] = found
                else:
                    scan.files[path] = Signature.of(entry.stat(follow_symlinks=False))
        return scan

    def _apply_local_tree(self, scan: Scan) -> None:
        by_path = {note.path: note for note in self.notes.values()}
        gone: list[Note] = []
        for note in self.notes.values():
            sig = scan.files.get(note.path)
            if sig is None and note.base is not None and self._exists(note.path):
                # There, but not listed: a name the scan refuses (the server's own name for it is fine).
                sig = note.sig
            if sig is None:
                if note.base is not None:
                    note.missing += 1
                    gone.append(note)
            else:
                note.missing = 0
                if sig != note.sig:
                    note.dirty = True
        new = sorted(path for path in scan.files if path not in by_path)
        if new and gone:
            self._local_moves(new, gone)
            new = [path for path in new if path not in {n.path for n in self.notes.values()}]
            gone = [note for note in gone if note.missing]
        for path in new:
            self._local_created(path)
        deleted = [note for note in gone if note.missing >= MISSING_SCANS or self.steps == 1]
        # Counted over every note missing now, not only those past the grace: a scan may catch `rm -r` half
        # way, and the rest must not slip through below the bar at the next scan.
        if deleted and len(gone) > max(MASS_DELETE, len(self.notes) // 2):
            deleted = gone
            # An unmounted disk, a wrong directory, a mistaken `rm -r`: never trash a folder in one go.
            self.say(
                "mass delete",
                f"{len(deleted)} notes vanished from {self.root} at once: they are written back, not deleted "
                "on the server (delete them there, or fewer at a time here)",
            )
            for note in deleted:
                note.sig, note.dirty, note.missing, note.restore = None, True, 0, True
            deleted = []
        for note in deleted:
            self._local_deleted(note)
        for folder in sorted(self.known_folders - scan.dirs):
            self._local_folder_gone(folder)
        self._remove_leaving_folders()
        for folder in sorted(scan.dirs - self.known_folders - self._folders_leaving):
            self._local_folder_made(folder)

    def _exists(self, path: str) -> bool:
        try:
            return os.path.lexists(on_disk(self.root, path))
        except Refused:
            return True  # never treat what we cannot look at as deleted

    def _local_moves(self, new: list[str], gone: list[Note]) -> None:
        """A file that appeared holding exactly the text a vanished note had is that note, moved."""
        waiting = {note.base: note for note in gone if note.base is not None}
        for path in new:
            try:
                found = read_note(on_disk(self.root, path))
            except (Refused, NotText, OSError):
                continue
            if found is None or found[0] not in waiting:
                continue
            note = waiting.pop(found[0])
            if not self.writable:
                self.say(f"read-only {path}", self._read_only_message(f"moving {note.path} to {path}"))
                continue
            try:
                self._paths().check(path, replacing=note.path)
            except InvalidPath as exc:
                self.say(f"refused {path}", f"refused: {exc}")
                continue
            self._moves_to_send.append((note, note.path, path))
            note.moved_from = note.path
            note.path, note.missing, note.sig, note.dirty = path, 0, found[1], True
            self._state_dirty = True

    async def _send_moves(self) -> None:
        """The server moves each note renamed on disk and rewrites every link to it, as a move in the
        admin does (`POST /api/documents/move`); the links it rewrites come back as edits of the notes that
        hold them. A server that cannot (an older one) gets the rename as a folder entry edit, links left."""
        moves, self._moves_to_send = self._moves_to_send, []
        relinked = 0
        for note, old, new in moves:
            try:
                done = await asyncio.to_thread(self.server.move, folder=self.folder.name, path=old, new=new)
            except ServerError as exc:
                self.say(f"relink {new}", f"moved {old} -> {new} without rewriting links to it: {exc}")
                self._move_entry(note, old, new)
                continue
            relinked += done
            logger.info("moved %s -> %s (%d links to it rewritten)", old, new, done)
        if relinked:
            # An editor that rewrote the same links (Obsidian does) saved notes the server has just edited:
            # their saves are merged onto the server's edits once these are here, so a link both sides
            # rewrote is rewritten once, not twice.
            waiting = [n.link for n in self.notes.values() if n.dirty and n.link is not None]
            await asyncio.gather(*(link.caught_up() for link in waiting))

    def _move_entry(self, note: Note, old: str, new: str) -> None:
        meta = self._filemeta().get(old)
        plain = dict(meta) if isinstance(meta, dict) else {"id": note.uuid, "type": "markdown", "version": 0}

        def move(filemeta: Map, legacy: Map) -> None:
            self._add_parents(filemeta, new)
            if old in filemeta:
                del filemeta[old]
            if old in legacy:
                del legacy[old]
            filemeta[new] = plain
            legacy[new] = plain["id"]

        self._edit_tree(move)

    def _add_parents(self, filemeta: Map, path: str) -> None:
        parts = path.split("/")[1:-1]
        for depth in range(1, len(parts) + 1):
            folder = folder_path(parts[:depth])
            if folder not in filemeta:
                filemeta[folder] = {"id": str(uuidlib.uuid4()), "type": "folder", "version": 0}
            self.known_folders.add(folder)

    def _local_created(self, path: str) -> None:
        if not self.writable:
            self.say(f"read-only {path}", self._read_only_message(f"the new file {path} stays on this disk"))
            return
        try:
            self._paths().check(path)
        except InvalidPath as exc:
            self.say(f"refused {path}", f"refused: {exc}")
            return
        uid = str(uuidlib.uuid4())

        def create(filemeta: Map, legacy: Map) -> None:
            self._add_parents(filemeta, path)
            filemeta[path] = {"id": uid, "type": "markdown", "version": 0}
            legacy[path] = uid

        self._edit_tree(create)
        # The base is the empty note the server makes: the file's whole text goes up as the first edit.
        note = Note(uid, path, "")
        note.link = self._link(self.folder.note_doc_id(uid), path, grace=NEW_NOTE_GRACE)
        self.notes[uid] = note
        self._state_dirty = True
        logger.info("created %s", path)

    def _local_deleted(self, note: Note) -> None:
        if not self.writable:
            self.say(f"read-only {note.path}", self._read_only_message(f"{note.path} was put back"))
            note.sig, note.dirty, note.missing, note.restore = None, True, 0, True
            return

        def delete(filemeta: Map, legacy: Map) -> None:
            if note.path in filemeta:
                del filemeta[note.path]
            if note.path in legacy:
                del legacy[note.path]

        self._edit_tree(delete)
        self.notes.pop(note.uuid, None)
        if note.link is not None:
            asyncio.get_running_loop().create_task(note.link.stop())
        self._state_dirty = True
        logger.info("deleted %s (it goes to the folder's trash on the server)", note.path)

    def _local_folder_gone(self, folder: str) -> None:
        """A sub-folder mirrored before is gone from disk: once nothing of the folder is left in it on the
        server either, its entry goes; a read-only token puts it back."""
        if self._exists(folder):
            return
        if not self.writable:
            self._mkdir(folder)
            return
        paths: list[str] = list(self._filemeta().keys())
        if any(path.startswith(folder + "/") for path in paths):
            return  # its notes are being deleted or moved; the entry goes at a later step

        def delete(filemeta: Map, legacy: Map) -> None:
            if folder in filemeta:
                del filemeta[folder]

        self._edit_tree(delete)
        self.known_folders.discard(folder)
        self._state_dirty = True

    def _local_folder_made(self, folder: str) -> None:
        """A directory the folder has no entry for (an empty one made on disk, or one whose files are not
        synced yet): it becomes a sub-folder entry."""
        if folder in self._filemeta():
            self.known_folders.add(folder)
            self._state_dirty = True
            return
        if not self.writable:
            self.say(
                f"read-only {folder}",
                self._read_only_message(f"the new directory {folder} stays on this disk"),
            )
            return
        try:
            self._paths().check(folder, type="folder")
        except InvalidPath as exc:
            self.say(f"refused {folder}", f"refused: {exc}")
            return

        def create(filemeta: Map, legacy: Map) -> None:
            self._add_parents(filemeta, folder + "/x")
            if folder not in filemeta:
                filemeta[folder] = {"id": str(uuidlib.uuid4()), "type": "folder", "version": 0}

        self._edit_tree(create)
        self.known_folders.add(folder)
        self._state_dirty = True
        logger.info("created the sub-folder %s", folder)

    def _read_only_message(self, what: str) -> str:
        if self.suggests:
            return (
                f"this token may only suggest changes to the text of {self.folder.name!r}'s notes: other "
                f"local changes are not sent to the server ({what})"
            )
        return (
            f"this token may only read {self.folder.name!r}: local changes are not sent to the server "
            f"({what})"
        )

    # ------------------------------------------------------------------ one note

    def _read(self, note: Note, target: Path) -> tuple[str, Signature] | None:
        try:
            return read_note(target)
        except NotText as exc:
            self.say(f"text {note.path}", f"not synced: {exc}")
            return None

    def _sync_note(self, note: Note) -> None:
        assert note.link is not None
        if note.proposing:
            return  # the file follows the server's text once the suggestions are made
        try:
            target = on_disk(self.root, note.path)
        except Refused as exc:
            self.say(f"target {note.path}", f"not written: {exc}")
            note.dirty = False
            return
        try:
            found = read_note(target)
        except NotText as exc:
            self.say(f"text {note.path}", f"not synced: {exc}")
            note.dirty = False
            return
        text_type = note.link.text
        current = str(text_type)
        if found is None:
            if note.base is not None and not note.restore:
                return  # deleted on disk: the scan carries the delete (or decides to put it back)
            written = write_note(target, current, expect=None, create=True)
            note.restore = False
            if written is not None:
                note.base, note.sig, note.dirty = current, written, False
                self._state_dirty = True
            return
        text, sig = found
        if note.base is None:
            if text != current:
                self._keep_both(note, text, sig, current, target)
                return
            note.base, note.sig, note.dirty = current, sig, False
            self._state_dirty = True
            return
        base = note.base
        if text == current:
            # Both sides hold the same text: nothing to merge, whatever the base says. (After a crash
            # between a write and the state file's next save, the base is older than both: carried onto
            # the document, the change from it would insert the server's own edit a second time.)
            base = text
        just_written = time.monotonic() - note.written_at < STALE_SAVE_WINDOW
        if text != base and note.replaced is not None and just_written:
            base = base_of_save(written=base, replaced=note.replaced, saved=text)
            if base is note.replaced:
                logger.info("%s was saved from the text before our last write: merged as its edit", note.path)
        note.replaced = None
        if text != base and self.suggests:
            self._propose(note, base, text, current)
            return
        if text != base:
            if not self.writable:
                self.say(f"read-only {note.path}", self._read_only_message(f"{note.path} was put back"))
            else:
                ops = rebase(base, text, current)
                if ops:
                    doc = note.link.doc
                    before = doc.get_state()
                    with doc.transaction():
                        apply_ops(text_type, current, ops)
                    note.link.send_since(before)
                    current = str(text_type)
                base = text
        if current != text:
            written = write_note(target, current, expect=sig)
            if written is None:
                # Saved again meanwhile: what the document holds now came from `base`; merge that save next.
                note.base, note.sig, note.dirty = base, None, True
                self._state_dirty = True
                return
            sig = written
            if self.writable:  # else the write may put back a refused save, which must not come back
                note.replaced, note.written_at = text, time.monotonic()
        note.base, note.sig, note.dirty = current, sig, False
        self._state_dirty = True

    def _propose(self, note: Note, base: str, text: str, current: str) -> None:
        """A save by a `suggest` token: sent as suggestions (`proposing.py`); the file then follows the
        server's text, marks and all, or is put back when nothing can be suggested."""
        wanted = proposed_text(base=base, saved=text, current=current)
        note.base, note.dirty = text, True  # whatever comes of it, the file follows the server next
        if wanted is None:
            self.say(
                f"unsuggested {note.path}",
                f"{note.path}: only the text of a note can be suggested, not the marks of pending "
                "suggestions: the file was put back",
            )
            return
        note.proposing = True
        task = asyncio.get_running_loop().create_task(self._proposal(note, wanted))
        self._proposals.add(task)
        task.add_done_callback(self._proposals.discard)

    async def _proposal(self, note: Note, wanted: str) -> None:
        try:
            refused = await asyncio.to_thread(
                propose, self.server, file_path=f"{self.folder.name}{note.path}", content=wanted
            )
        finally:
            note.proposing = False
            self._wake.set()
        if refused is None:
            logger.info("suggested the change of %s", note.path)
        else:
            said = f"{note.path}: not suggested: {refused} (the file was put back)"
            self.say(f"refused {note.path} {refused}", said)

    def _keep_both(self, note: Note, text: str, sig: Signature, current: str, target: Path) -> None:
        """First sync of a note that exists on both sides with different texts and no common past: the
        server's text takes the name, the file's text is kept beside it as a new note (nothing lost)."""
        stem = note.path[: -len(".md")]
        taken = {other.path for other in self.notes.values()}
        count = 1
        while True:
            aside = f"{stem} (local copy{'' if count == 1 else f' {count}'}).md"
            try:
                aside_target = on_disk(self.root, aside)
            except Refused:
                aside = f"{note.path.rsplit('/', 1)[0]}/local copy {uuidlib.uuid4().hex[:8]}.md"
                aside_target = on_disk(self.root, aside)
            if not aside_target.exists() and aside not in taken:
                break
            count += 1
        if write_note(aside_target, text, expect=None, create=True) is None:
            return
        written = write_note(target, current, expect=sig)
        if written is None:
            aside_target.unlink()
            return
        note.base, note.sig, note.dirty = current, written, False
        self._state_dirty = True
        logger.warning(
            "%s differed here and on the server at the first sync: the server's text is in %s, yours in %s",
            note.path,
            note.path,
            aside,
        )

    # ------------------------------------------------------------------ state

    def _state_text(self, *, force: bool = False) -> str | None:
        """The state file's new text when it is due (changed, and not saved lately), else None."""
        if not self._state_dirty:
            return None
        now = asyncio.get_running_loop().time()
        if not force and now - self._last_save < self._save_every:
            return None
        self.state.notes = {
            uid: {"path": note.path, "text": note.base}
            for uid, note in self.notes.items()
            if note.base is not None
        }
        self.state.folders = set(self.known_folders)
        self.state.files = self.attachments.base
        text = self.state.render()
        self._state_dirty = False
        self._last_save = now
        return text

    async def _save_state_now(self) -> None:
        if self._saving is not None:
            with contextlib.suppress(Exception):
                await self._saving
        text = self._state_text(force=True)
        if text is not None:
            write_state(self.root, text)

    def _save_state_soon(self) -> None:
        """Save the state when due, written by a thread while notes go on syncing (10,000 notes are a 10 MB
        file, ~0.1 s to write), one write at a time."""
        if self._saving is not None and not self._saving.done():
            return
        text = self._state_text()
        if text is None:
            return
        started = time.perf_counter()

        def written(done: asyncio.Future[None]) -> None:
            if not done.cancelled() and done.exception() is not None:
                logger.error("cannot save the state file: %s (tried again later)", done.exception())
                self._state_dirty = True
            # Saving stays a small share of the time.
            self._save_every = max(STATE_SAVE_EVERY, 20 * (time.perf_counter() - started))

        self._saving = asyncio.ensure_future(asyncio.to_thread(write_state, self.root, text))
        self._saving.add_done_callback(written)
