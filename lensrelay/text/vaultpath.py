"""Path rules for documents inside shared folders: the one validator every way in uses.

Two spellings exist:
- folder-relative paths, as stored in a folder doc's ``filemeta_v0`` map: ``"/Notes/Ideas.md"``;
- user-facing paths, folder name first: ``"Lens/Notes/Ideas.md"``.

Rules (each refusal names its rule): no empty, '.' or '..' segments; no hidden or dot-only names
(a name starting with '.', so ``.md`` and ``...md`` too); no control characters, backslashes,
unpaired surrogates, bidi overrides or isolates (U+202A-U+202E, U+2066-U+2069) or byte order marks
(U+FEFF); NFC-normalised; bounded length. Against a folder's existing entries (``FolderPaths``): no
path inside a document, no document where a folder's contents are, and no two entries equal after
case-folding and NFC (Obsidian on macOS and Windows cannot hold both).

Stored paths are strict (a non-NFC entry is refused); what a person or an assistant types is
normalised to NFC first (``normalize_path``), since they cannot see the difference.

Two rules compare names under a looser folding (``name_key``: percent-decoded, NFKC, case-folded,
invisible format characters dropped, trailing dots and spaces ignored), since each spelling it merges
looks like, or is opened by some client as, the same name: ``_trash`` as a folder's first segment is
reserved for the trash in every such spelling (``names_trash``), and two shared folders may not have
names with the same key.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import unquote

MAX_PATH_CHARS = 1024
MAX_SEGMENT_BYTES = 255

# C0 controls, DEL, C1 controls and the line/paragraph separators: never part of a name a person typed.
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Characters that make a name display differently from what it is.
_INVISIBLE_CHARS = re.compile(r"[\u202a-\u202e\u2066-\u2069\ufeff]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


# The trash of a folder, as the trash service writes it (lens-relay's spelling). Every other spelling of
# it is refused at every way in (see `names_trash`).
TRASH = "/_trash"
TRASH_NAME = TRASH[1:]
# Percent-decoding is applied until nothing changes, at most this often ("%255F" is "%5F" is "_").
_DECODE_ROUNDS = 4
_TRAILING = ". "


class InvalidPath(ValueError):
    """A path that no document can have; the message says why in words a user understands."""


def _shown(path: str) -> str:
    # Keep error messages readable even when someone sends a megabyte of garbage.
    # repr escapes what cannot be shown (controls, bidi overrides, surrogates), so no message misleads.
    return repr(path if len(path) <= 80 else path[:77] + "...")


def normalize_path(path: str) -> str:
    """The NFC form of a path a person or an assistant typed (macOS keyboards may give NFD)."""
    if _SURROGATES.search(path) or unicodedata.is_normalized("NFC", path):
        return path
    return unicodedata.normalize("NFC", path)


def fold_key(path: str) -> str:
    """Two paths with the same key cannot live side by side on macOS or Windows.

    Upper-cased, then case-folded: folding alone keeps the dotless i (U+0131) apart from I, which is its upper
    case (and what Windows compares); NFC again after, as case mappings may leave it.
    """
    return normalize_path(normalize_path(path).upper().casefold())


def name_key(name: str) -> str:
    """The form under which two names are the same name to someone reading or opening them.

    Percent-decoded (a path may arrive URL-encoded), NFKC (compatibility forms: fullwidth letters,
    ligatures, mathematical letters) and case-folded, then NFKC again (folding can denormalise),
    without invisible format characters (zero-width spaces and joiners, soft hyphens)
    and without trailing dots and spaces (Windows drops them: ``_trash.`` opens ``_trash``).
    """
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote(name) if "%" in name else name
        if decoded == name:
            break
        name = decoded
    # Invisible characters go first: one between a letter and its accent would keep them apart.
    visible = "".join(c for c in name if unicodedata.category(c) != "Cf")
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", visible).casefold()).rstrip(_TRAILING)


def names_trash(path: str) -> bool:
    """Whether a path (folder-relative ``/_trash/x.md``, or a bare first name) is the trash or inside it
    in any spelling that folds to ``_trash`` (see `name_key`): reserved for the trash service."""
    first = path.lstrip("/").split("/", 1)[0]
    if first.isascii() and "%" not in first:
        # The common case, on every entry of every folder the mirror reads: plain ASCII folds by case.
        return first.rstrip(_TRAILING).lower() == TRASH_NAME
    # Decoded and folded, then split again: "%2F" and a fullwidth solidus become separators too.
    folded = name_key(first).lstrip("/").split("/", 1)[0]
    return folded.rstrip(_TRAILING) == TRASH_NAME


def is_canonical_trash(path: str) -> bool:
    """Whether a folder-relative path is the trash or inside it, spelled as the trash service spells it."""
    return path == TRASH or path.startswith(TRASH + "/")


def trash_refusal(shown: str) -> str:
    """Why nothing may be created at, or moved to, a path that `names_trash`; `shown` names it."""
    return (
        f"{shown} is in the folder's trash: '{TRASH_NAME}' is reserved for it in every spelling (letter "
        "case, Unicode compatibility forms, percent-encoding, trailing dots or spaces), and nothing can be "
        "created in it or moved to it but by deleting (restore brings a document back)"
    )


def refuse_trash(path: str, *, shown: str | None = None) -> str:
    """Raise InvalidPath when `path` names the trash in any spelling; return it unchanged."""
    if names_trash(path):
        raise InvalidPath(trash_refusal(shown if shown is not None else _shown(path)))
    return path


def folder_name_key(name: str) -> str:
    """Two shared folders whose names have the same key cannot both exist (see `name_key`)."""
    return name_key(name)


def _check_characters(path: str, *, what: str) -> None:
    if "\\" in path:
        raise InvalidPath(f"{what} {_shown(path)} contains a backslash; use '/' to separate folders")
    if _SURROGATES.search(path):
        raise InvalidPath(f"{what} {_shown(path)} contains an unpaired surrogate (not valid Unicode text)")
    bad = _CONTROL_CHARS.search(path)
    if bad is not None:
        code = f"U+{ord(bad.group()):04X}"
        raise InvalidPath(f"{what} {_shown(path)} contains a control character ({code})")
    bad = _INVISIBLE_CHARS.search(path)
    if bad is not None:
        code = f"U+{ord(bad.group()):04X}"
        raise InvalidPath(
            f"{what} {_shown(path)} contains an invisible formatting character ({code}: a bidi override, "
            "isolate or byte order mark) that makes it display as something it is not"
        )
    if not unicodedata.is_normalized("NFC", path):
        raise InvalidPath(f"{what} {_shown(path)} is not NFC-normalised Unicode; store its NFC form")


def _check_segment(segment: str, *, path: str, what: str) -> None:
    if segment == "":
        raise InvalidPath(f"{what} {_shown(path)} has an empty segment ('//' or a trailing '/')")
    if segment in (".", ".."):
        raise InvalidPath(f"{what} {_shown(path)} contains a '{segment}' segment; paths may not navigate")
    if segment.startswith("."):
        raise InvalidPath(
            f"{what} {_shown(path)} has a hidden or dot-only name {_shown(segment)}; names may not start "
            "with '.'"
        )
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
    trailing '/'), '.' or '..' segments, hidden or dot-only names, backslashes, control, bidi and
    BOM characters (NUL included), unpaired surrogates, text that is not NFC, paths over
    MAX_PATH_CHARS characters and names over MAX_SEGMENT_BYTES UTF-8 bytes.
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
    names may begin or end with spaces. The path is normalised to NFC first (what someone typed).
    A well-formed path naming no existing folder (say ``"/etc/passwd"``) parses fine and simply
    resolves to nothing later.
    """
    path = normalize_path(path)
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


class FolderPaths:
    """A folder's existing entries (path -> type), to check a new path against them.

    Keys are compared case-folded and NFC-normalised, as macOS and Windows file systems do.
    """

    def __init__(self, entries: Iterable[tuple[str, str]] = ()) -> None:
        self._entries: dict[str, tuple[str, str]] = {}  # fold key -> (path, type)
        self._parents: dict[str, int] = {}  # fold key of a folder -> how many entries are inside it
        for path, kind in entries:
            self.add(path, kind)

    def check(
        self, path: str, *, type: str = "markdown", replacing: str | None = None, trash: bool = False
    ) -> str:
        """Validate ``path`` as a new entry of this folder; return it unchanged.

        ``replacing`` names an entry that goes away at the same time (a rename), so renaming a
        document to a different case of its own name is allowed. The trash is refused in every
        spelling; with ``trash`` (the folder-document mirror, where the trash lives) its own spelling,
        ``/_trash``, is admitted.
        """
        validate_relative_path(path)
        if names_trash(path) and not (trash and is_canonical_trash(path)):
            raise InvalidPath(trash_refusal(f"path {_shown(path)}"))
        key = fold_key(path)
        gone = fold_key(replacing) if replacing is not None else None
        clash = self._entries.get(key)
        if clash is not None and key != gone:
            if clash[0] == path:
                raise InvalidPath(f"path {_shown(path)} already exists")
            raise InvalidPath(
                f"path {_shown(path)} differs from the existing {_shown(clash[0])} only by letter case or "
                "Unicode normalisation; Obsidian on macOS and Windows cannot hold both"
            )
        segments = key.split("/")
        for end in range(2, len(segments)):
            ancestor = "/".join(segments[:end])
            found = self._entries.get(ancestor)
            if found is not None and found[1] != "folder" and ancestor != gone:
                raise InvalidPath(
                    f"path {_shown(path)} is inside the document {_shown(found[0])}; only folders hold "
                    "documents"
                )
        if type != "folder" and self._parents.get(key, 0) > 0:
            raise InvalidPath(f"path {_shown(path)} is a folder that holds other entries, not a document")
        return path

    def add(self, path: str, kind: str) -> None:
        """Record an entry (checked or already stored) so later checks see it."""
        key = fold_key(path)
        if key in self._entries:
            return
        self._entries[key] = (path, kind)
        segments = key.split("/")
        for end in range(2, len(segments)):
            ancestor = "/".join(segments[:end])
            self._parents[ancestor] = self._parents.get(ancestor, 0) + 1
