"""Obsidian-style wikilink resolution across shared folders.

A link's target text (heading and alias already removed) is tried, case-insensitively and with
'.md' optional, in this order:

1. relative to the linking document's directory ('./' and '../' allowed); every shared folder is
   a sibling directory in the user's vault, so '../' may climb above the folder root to the vault
   root and down into another folder (``[[../Lens Edu/Syllabus]]`` from a note at Lens's root),
   never above the vault root; text starting with './' or '../' stops here;
2. as a path from the linking document's folder root (a leading '/' means this, and stops
   after step 3);
3. from the root of the virtual tree ``/{folder name}/...`` (``[[Lens Edu/Syllabus]]``);
4. by basename, Obsidian's "shortest path" links; a link with directories matches files whose
   path ends with them (``[[Notes/Ideas]]`` finds ``/Deep/Notes/Ideas.md``). Matches in the
   linking document's own folder win (shortest path, then alphabetical); otherwise the first
   folder by name wins and every match is reported, so the link shows up as ambiguous.

Several matches in the linking folder are reported as ambiguous as well: Obsidian would have
written a longer link had the name been unique, so the author cannot know which one they get.

The index may hold any file, not only notes: an embed (``![[diagram.png]]``, ``[[board.canvas]]``)
names its file with the extension, and only '.md' is ever added to a link, so ``[[diagram]]`` never
reaches ``diagram.png``, as in Obsidian.

Matching compares NFC-normalized lower-case keys (JavaScript's ``toLowerCase``, as Obsidian),
while stored paths stay byte-exact. Every lookup is a dict access; nothing scans the vault.
"""

from __future__ import annotations

import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

_Key = TypeVar("_Key")


@dataclass(frozen=True)
class LinkTarget:
    """A file a link may reach (a note, or an embedded image, PDF, canvas...): its shared folder's name
    and its folder-relative path."""

    folder: str
    path: str  # leading slash: "/Notes/Ideas.md"

    @property
    def user_path(self) -> str:
        return self.folder + self.path


@dataclass(frozen=True)
class Resolution:
    """Where a link goes. ``candidates`` lists every document it could mean, the chosen one
    first; more than one means the link is ambiguous. ``via`` names the rule that matched:
    "self", "relative", "folder", "virtual", "basename", or None when nothing matched."""

    target: LinkTarget | None
    candidates: tuple[LinkTarget, ...]
    via: str | None = None

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


UNRESOLVED = Resolution(target=None, candidates=())


def match_key(text: str) -> str:
    """The case- and normalization-insensitive form used to compare names."""
    if text.isascii():
        return text.lower()
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    # lower() writes a word-final sigma as 'ς', so "ΟΔΟΣ" and "ΟΔΟΣ.md" would disagree.
    return text.lower().replace("\u03c2", "\u03c3")  # final sigma -> sigma


def _keys_with_optional_md(key: str) -> tuple[str, ...]:
    # A link may omit '.md'; try the markdown file first, then a document literally so named.
    return (key,) if key.endswith(".md") else (key + ".md", key)


def _basename(path: str) -> str:
    return path.rpartition("/")[2]


def _depth(target: LinkTarget) -> int:
    return target.path.count("/")


def _collapse_dots(segments: list[str]) -> list[str] | None:
    """Apply '.' and '..'; None when the path climbs above its root or ends up empty."""
    out: list[str] = []
    for segment in segments:
        if segment == ".":
            continue
        if segment == "..":
            if not out:
                return None
            out.pop()
        else:
            out.append(segment)
    return out or None


def _climbs_out(directory: list[str], segments: list[str]) -> bool:
    """Whether '..' segments climb above the folder root (rather than the path ending up empty)."""
    depth = len(directory)
    for segment in segments:
        if segment == "..":
            depth -= 1
            if depth < 0:
                return True
        elif segment != ".":
            depth += 1
    return False


def _by_nearness_in_folder(target: LinkTarget) -> tuple[int, str, str]:
    return (_depth(target), match_key(target.path), target.path)


def _by_folder_then_nearness(target: LinkTarget) -> tuple[str, str, int, str, str]:
    return (match_key(target.folder), target.folder, *_by_nearness_in_folder(target))


class LinkResolver(ABC):
    """The resolution rules, over three lookups that concrete indexes provide."""

    @abstractmethod
    def _documents_at(self, folder: str, path_key: str) -> Iterable[LinkTarget]:
        """Documents in ``folder`` whose match_key(path) equals ``path_key``."""

    @abstractmethod
    def _documents_named(self, basename_key: str) -> Iterable[LinkTarget]:
        """Documents anywhere whose match_key(basename) equals ``basename_key``."""

    @abstractmethod
    def _folders_named(self, folder_key: str) -> Iterable[str]:
        """Folder names whose match_key equals ``folder_key``."""

    def resolve(self, *, source: LinkTarget, target: str) -> Resolution:
        """Resolve a link's target text (no heading, no alias) written in ``source``.

        An empty target (``[[#heading]]``) is a link to ``source`` itself.
        """
        text = target.strip()
        if text == "":
            return Resolution(target=source, candidates=(source,), via="self")
        absolute = text.startswith("/")
        segments = [segment for segment in text.split("/") if segment != ""]
        if not segments:
            return UNRESOLVED
        explicitly_relative = not absolute and segments[0] in (".", "..")
        has_dots = any(segment in (".", "..") for segment in segments)

        if not absolute:
            found = self._relative(source, segments)
            if found is not None or explicitly_relative:
                return found or UNRESOLVED

        found = self._at_path(source.folder, _collapse_dots(segments), via="folder")
        if found is not None:
            return found
        if has_dots:
            return UNRESOLVED

        if len(segments) > 1:
            found = self._in_virtual_tree(segments)
            if found is not None:
                return found
        if absolute:
            return UNRESOLVED
        return self._resolve_by_basename(source, segments)

    def _relative(self, source: LinkTarget, segments: list[str]) -> Resolution | None:
        directory = source.path.split("/")[1:-1]
        inside = _collapse_dots(directory + segments)
        if inside is not None or not _climbs_out(directory, segments):
            return self._at_path(source.folder, inside, via="relative")
        in_vault = _collapse_dots([source.folder, *directory, *segments])
        if in_vault is None or len(in_vault) < 2:
            return None
        return self._in_virtual_tree(in_vault, via="relative")

    def _at_path(self, folder: str, segments: list[str] | None, *, via: str) -> Resolution | None:
        if segments is None:
            return None
        path_key = match_key("/" + "/".join(segments))
        for key in _keys_with_optional_md(path_key):
            matches = sorted(self._documents_at(folder, key), key=_by_nearness_in_folder)
            if matches:
                # Several only when names differ by case alone: report them all.
                return Resolution(target=matches[0], candidates=tuple(matches), via=via)
        return None

    def _in_virtual_tree(self, segments: list[str], *, via: str = "virtual") -> Resolution | None:
        matches: list[LinkTarget] = []
        for folder in self._folders_named(match_key(segments[0])):
            found = self._at_path(folder, segments[1:], via=via)
            if found is not None:
                matches.extend(found.candidates)
        if not matches:
            return None
        matches.sort(key=_by_folder_then_nearness)
        return Resolution(target=matches[0], candidates=tuple(matches), via=via)

    def _resolve_by_basename(self, source: LinkTarget, segments: list[str]) -> Resolution:
        last_key = match_key(segments[-1])
        for key in _keys_with_optional_md(last_key):
            matches = list(self._documents_named(key))
            if len(segments) > 1:
                added_suffix = key[len(last_key) :]  # ".md" when the link omitted it
                suffix = "/" + match_key("/".join(segments)) + added_suffix
                matches = [m for m in matches if match_key("/" + m.folder + m.path).endswith(suffix)]
            if not matches:
                continue
            own_folder = [m for m in matches if m.folder == source.folder]
            if own_folder:
                own_folder.sort(key=_by_nearness_in_folder)
                return Resolution(target=own_folder[0], candidates=tuple(own_folder), via="basename")
            matches.sort(key=_by_folder_then_nearness)
            return Resolution(target=matches[0], candidates=tuple(matches), via="basename")
        return UNRESOLVED


class LinkIndex(LinkResolver):
    """Markdown documents of every folder, indexed for link resolution.

    Keep it current with add/remove as documents are created, renamed and deleted; each call
    touches a handful of dict entries. Not thread-safe: guard it if several threads write.
    """

    def __init__(self, targets: Iterable[LinkTarget] = ()) -> None:
        self._documents: set[LinkTarget] = set()
        self._path_buckets: dict[tuple[str, str], set[LinkTarget]] = {}
        self._basename_buckets: dict[str, set[LinkTarget]] = {}
        self._folder_names: dict[str, dict[str, int]] = {}  # folder key -> {name: document count}
        for target in targets:
            self.add(target)

    def __len__(self) -> int:
        return len(self._documents)

    def __contains__(self, target: object) -> bool:
        return target in self._documents

    def __iter__(self) -> Iterator[LinkTarget]:
        return iter(self._documents)

    def add(self, target: LinkTarget) -> None:
        """Index a document; adding one already present does nothing."""
        if target in self._documents:
            return
        self._documents.add(target)
        self._path_buckets.setdefault((target.folder, match_key(target.path)), set()).add(target)
        self._basename_buckets.setdefault(match_key(_basename(target.path)), set()).add(target)
        names = self._folder_names.setdefault(match_key(target.folder), {})
        names[target.folder] = names.get(target.folder, 0) + 1

    def remove(self, target: LinkTarget) -> None:
        """Forget a document; KeyError if it is not indexed."""
        self._documents.remove(target)
        _discard_from(self._path_buckets, (target.folder, match_key(target.path)), target)
        _discard_from(self._basename_buckets, match_key(_basename(target.path)), target)
        folder_key = match_key(target.folder)
        names = self._folder_names[folder_key]
        names[target.folder] -= 1
        if names[target.folder] == 0:
            del names[target.folder]
            if not names:
                del self._folder_names[folder_key]

    def discard(self, target: LinkTarget) -> None:
        """Forget a document if it is indexed."""
        if target in self._documents:
            self.remove(target)

    def move(self, old: LinkTarget, new: LinkTarget) -> None:
        """Record a rename or move."""
        self.remove(old)
        self.add(new)

    def with_move(self, old: LinkTarget, new: LinkTarget) -> LinkResolver:
        """A read-only view of this index as it will be once ``old`` became ``new``; costs nothing
        to build, and lets a caller check how links will resolve after a rename."""
        return self.with_moves({old: new})

    def with_moves(self, moves: Mapping[LinkTarget, LinkTarget]) -> LinkResolver:
        """The same for several documents moving at once (a sub-folder and everything under it);
        costs a few dict entries per moved document."""
        return _MovedView(self, moves)

    def _documents_at(self, folder: str, path_key: str) -> Iterable[LinkTarget]:
        return self._path_buckets.get((folder, path_key), ())

    def _documents_named(self, basename_key: str) -> Iterable[LinkTarget]:
        return self._basename_buckets.get(basename_key, ())

    def _folders_named(self, folder_key: str) -> Iterable[str]:
        return self._folder_names.get(folder_key, {}).keys()


def _discard_from(mapping: dict[_Key, set[LinkTarget]], key: _Key, target: LinkTarget) -> None:
    bucket = mapping[key]
    bucket.discard(target)
    if not bucket:
        del mapping[key]


class _MovedView(LinkResolver):
    def __init__(self, base: LinkIndex, moves: Mapping[LinkTarget, LinkTarget]) -> None:
        self._base = base
        self._gone = set(moves) | set(moves.values())
        self._at: dict[tuple[str, str], list[LinkTarget]] = {}
        self._named: dict[str, list[LinkTarget]] = {}
        self._folders: dict[str, set[str]] = {}
        for new in moves.values():
            self._at.setdefault((new.folder, match_key(new.path)), []).append(new)
            self._named.setdefault(match_key(_basename(new.path)), []).append(new)
            self._folders.setdefault(match_key(new.folder), set()).add(new.folder)

    def _swap(self, found: Iterable[LinkTarget], arrived: list[LinkTarget]) -> list[LinkTarget]:
        return [target for target in found if target not in self._gone] + arrived

    def _documents_at(self, folder: str, path_key: str) -> Iterable[LinkTarget]:
        return self._swap(self._base._documents_at(folder, path_key), self._at.get((folder, path_key), []))

    def _documents_named(self, basename_key: str) -> Iterable[LinkTarget]:
        return self._swap(self._base._documents_named(basename_key), self._named.get(basename_key, []))

    def _folders_named(self, folder_key: str) -> Iterable[str]:
        return set(self._base._folders_named(folder_key)) | self._folders.get(folder_key, set())
