"""Path rules for documents inside shared folders.

Two spellings exist:
- folder-relative paths, as stored in a folder doc's ``filemeta_v0`` map: ``"/Notes/Ideas.md"``;
- user-facing paths, folder name first: ``"Lens/Notes/Ideas.md"``.

Paths are kept exactly as given (no Unicode normalization, no case folding): Obsidian clients
compare names byte for byte, so whatever we hand back must round-trip unchanged.
"""

from __future__ import annotations

import re

MAX_PATH_CHARS = 1024
MAX_SEGMENT_BYTES = 255

# C0 controls, DEL and C1 controls: never part of a file name a person typed.
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class InvalidPath(ValueError):
    """A path that no document can have; the message says why in words a user understands."""


def _shown(path: str) -> str:
    # Keep error messages readable even when someone sends a megabyte of garbage.
    return repr(path if len(path) <= 80 else path[:77] + "...")


def _check_characters(path: str, *, what: str) -> None:
    if "\\" in path:
        raise InvalidPath(f"{what} {_shown(path)} contains a backslash; use '/' to separate folders")
    bad = _CONTROL_CHARS.search(path)
    if bad is not None:
        code = f"U+{ord(bad.group()):04X}"
        raise InvalidPath(f"{what} {_shown(path)} contains a control character ({code})")


def _check_segment(segment: str, *, path: str, what: str) -> None:
    if segment == "":
        raise InvalidPath(f"{what} {_shown(path)} has an empty segment ('//' or a trailing '/')")
    if segment in (".", ".."):
        raise InvalidPath(f"{what} {_shown(path)} contains a '{segment}' segment; paths may not navigate")
    if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
        raise InvalidPath(f"{what} {_shown(path)} has a name longer than {MAX_SEGMENT_BYTES} bytes")


def validate_folder_name(name: str) -> str:
    """Check a shared folder's name (``"Lens"``, ``"Lens Edu"``); return it unchanged."""
    if name == "":
        raise InvalidPath("folder name is empty")
    if "/" in name:
        raise InvalidPath(f"folder name {_shown(name)} contains '/'")
    _check_characters(name, what="folder name")
    _check_segment(name, path=name, what="folder name")
    return name


def validate_relative_path(path: str) -> str:
    """Check a folder-relative path such as ``"/Notes/Ideas.md"``; return it unchanged.

    Raises InvalidPath for: no leading '/', the bare root '/', empty segments (``"//x"``,
    trailing '/'), '.' or '..' segments, backslashes, control characters (NUL included), paths
    over MAX_PATH_CHARS characters and names over MAX_SEGMENT_BYTES UTF-8 bytes.
    """
    if not path.startswith("/"):
        raise InvalidPath(f"path {_shown(path)} must start with '/'")
    if path == "/":
        raise InvalidPath("path '/' is the folder itself, not a document")
    if len(path) > MAX_PATH_CHARS:
        raise InvalidPath(f"path is longer than {MAX_PATH_CHARS} characters")
    _check_characters(path, what="path")
    for segment in path[1:].split("/"):
        _check_segment(segment, path=path, what="path")
    return path


def split_user_path(path: str) -> tuple[str, str]:
    """Split ``"Lens/Notes/Ideas.md"`` into ``("Lens", "/Notes/Ideas.md")``.

    One leading '/' is tolerated (``"/Lens/Notes/Ideas.md"``). Whitespace is significant, since
    names may begin or end with spaces. A well-formed path naming no existing folder (say
    ``"/etc/passwd"``) parses fine and simply resolves to nothing later.
    """
    if path.startswith("/"):
        path = path[1:]
    if path == "":
        raise InvalidPath("path is empty")
    folder, slash, rest = path.partition("/")
    if not slash or rest == "":
        raise InvalidPath(f"path {_shown(path)} names only a folder; expected 'Folder/name.md'")
    try:
        validate_folder_name(folder)
    except InvalidPath as exc:
        raise InvalidPath(f"path {_shown(path)}: {exc}") from None
    return folder, validate_relative_path("/" + rest)


def join_user_path(folder: str, relative: str) -> str:
    """Inverse of split_user_path: ``("Lens", "/Notes/Ideas.md")`` -> ``"Lens/Notes/Ideas.md"``."""
    validate_folder_name(folder)
    validate_relative_path(relative)
    return folder + relative


def has_md_suffix(path: str) -> bool:
    """True when the last segment ends in '.md' (any case)."""
    return path.rpartition("/")[2].lower().endswith(".md")


def with_md_suffix(path: str) -> str:
    """Append '.md' unless the last segment already ends in it (any case); callers may omit it."""
    return path if has_md_suffix(path) else path + ".md"
