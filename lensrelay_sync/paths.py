"""Which names on disk may become entries of the folder, and where an entry of the folder may be written.

The server's own path rules (`lensrelay.text.vaultpath`, pure text, no Django) decide what a folder may hold;
this module adds what only a directory on disk needs: device names Windows cannot hold, and the guarantee
that nothing is ever read or written outside the directory (no `..`, no symbolic link on the way).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from lensrelay.text.vaultpath import InvalidPath, names_trash, trash_refusal, validate_relative_path

STATE_NAME = ".lensrelay-sync.json"
# Our own temporary files: hidden (a dot-name), so neither this client's scan nor Obsidian picks them up.
TEMP_PREFIX = ".lensrelay-sync-"

# Names Windows reserves for devices, with any extension (`CON.md`, `nul.txt`): a collaborator on Windows
# could not hold the note, and Obsidian there fails on it.
_WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"COM{n}" for n in "123456789¹²³"}
    | {f"LPT{n}" for n in "123456789¹²³"}
)


_SURROGATES = re.compile(r"[\ud800-\udfff]")


class Refused(ValueError):
    """A name on disk, or an entry of the folder, that this client will not mirror; the message says why."""


def is_hidden(name: str) -> bool:
    """Dot-names (`.obsidian`, `.git`, editors' temporary files, our state file) are never mirrored."""
    return name.startswith(".")


def is_note(name: str) -> bool:
    return name.lower().endswith(".md") and len(name) > 3


def folder_path(parts: list[str]) -> str:
    """The folder-relative path (`/Notes/Ideas.md`) of a path relative to the directory, given by parts."""
    return "/" + "/".join(parts)


def check_local(path: str) -> str:
    """Refuse a folder-relative path, made from a name on disk, that the folder may not hold.

    Refused: names that are not UTF-8, anything the server's rules refuse (`..`, empty, hidden and
    over-long names, control and invisible characters, names not in NFC form: the server stores NFC, so the
    file would come back under a second name), the trash in any spelling, Windows device names and names
    ending in a space or a dot.
    """
    if _SURROGATES.search(path):  # bytes that are not UTF-8, kept by os.fsdecode as lone surrogates
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise Refused(f"{shown!r}: the name is not UTF-8 text, which the folder's names must be")
    try:
        validate_relative_path(path)
    except InvalidPath as exc:
        raise Refused(str(exc)) from None
    if names_trash(path):
        raise Refused(trash_refusal(repr(path)))
    for segment in path[1:].split("/"):
        stem = segment.split(".", 1)[0].rstrip(" ").upper()
        if stem in _WINDOWS_DEVICES:
            raise Refused(f"{path!r}: {segment!r} is a device name on Windows, which no file there can have")
        if segment.endswith((" ", ".")):
            raise Refused(f"{path!r}: {segment!r} ends with a space or a dot, which Windows drops")
    return path


def check_remote(path: str) -> str:
    """Refuse an entry of the folder this client will not write to disk (the server refuses these too; a
    client never trusts that)."""
    try:
        validate_relative_path(path)
    except InvalidPath as exc:
        raise Refused(str(exc)) from None
    if names_trash(path):
        raise Refused(f"{path!r} is in the folder's trash")
    return path


def on_disk(root: Path, path: str) -> Path:
    """Where the folder-relative ``path`` lives under ``root``, refusing any way out of ``root``.

    Every existing directory on the way must be a real directory inside ``root`` (a symbolic link, even one
    pointing inside, is refused: it could be changed to point elsewhere), and the file itself must not be a
    link. ``root`` must be the resolved directory.
    """
    parts = check_remote(path)[1:].split("/")
    target = root.joinpath(*parts)
    at = root
    for part in parts[:-1]:
        at = at / part
        if os.path.islink(at):
            raise Refused(f"{path!r} goes through the symbolic link {at}")
        if at.exists() and not at.is_dir():
            raise Refused(f"{path!r} goes through {at}, which is not a directory")
    if os.path.islink(target):
        raise Refused(f"{path!r} is a symbolic link on disk")
    if os.path.commonpath([root, os.path.abspath(target)]) != str(root):
        raise Refused(f"{path!r} would be outside {root}")
    return target
