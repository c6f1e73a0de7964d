"""Reading and writing files on disk: whole-or-nothing writes (a temporary file in the same directory, then
`os.replace`), and a file's signature, which the scan compares to notice saves."""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from lensrelay_sync.paths import TEMP_PREFIX


@dataclass(frozen=True)
class Signature:
    """What changes when a file is saved, in place or by an editor's write-then-rename."""

    mtime_ns: int
    size: int
    inode: int

    @classmethod
    def of(cls, stat: os.stat_result) -> Signature:
        return cls(stat.st_mtime_ns, stat.st_size, stat.st_ino)


def signature(path: Path) -> Signature | None:
    try:
        return Signature.of(os.stat(path, follow_symlinks=False))
    except FileNotFoundError:
        return None


class NotText(ValueError):
    """A note whose bytes are not UTF-8."""


def read_note(path: Path) -> tuple[str, Signature] | None:
    """The text of a note and the signature it had when read (None when it is gone). A file saved while it
    was read is read again, so text and signature belong together."""
    for _ in range(5):
        before = signature(path)
        if before is None:
            return None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if signature(path) == before:
            try:
                return data.decode("utf-8"), before
            except UnicodeDecodeError as exc:
                raise NotText(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    raise OSError(f"{path} keeps changing while it is read")


def write_note(path: Path, text: str, *, expect: Signature | None, create: bool = False) -> Signature | None:
    return write_file(path, text.encode("utf-8"), expect=expect, create=create)


def write_file(
    path: Path, data: bytes, *, expect: Signature | None, create: bool = False
) -> Signature | None:
    """Replace the file at ``path`` by ``data`` at once (readers see the old file or the new, never a part).

    ``expect`` is the signature the file had when it was last read: when it differs now (someone saved
    meanwhile), nothing is written and None is returned, so that save is merged first. ``create`` allows a
    file that does not exist yet (``expect`` None). Returns the new file's signature.
    """
    now = signature(path)
    if now != expect and not (create and now is None):
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f"{TEMP_PREFIX}{secrets.token_hex(6)}.tmp"
    try:
        with open(temp, "xb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if now is not None:
            with contextlib.suppress(OSError):
                os.chmod(temp, os.stat(path).st_mode & 0o7777)
        # Our file's own signature, taken before the rename (which keeps it): read at the path afterwards, it
        # could be that of a save made just after the rename, which would then never be seen as a change.
        written = Signature.of(os.stat(temp))
        # The last look before the rename: a save in between these two lines is the only one that can be lost.
        if signature(path) != now:
            return None
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return written
