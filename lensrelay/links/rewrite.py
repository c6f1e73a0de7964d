"""Rewrite wikilinks when documents are renamed or moved, one at a time or a sub-folder at once.

A ``Relocation`` is built from the index as it was BEFORE the moves: a link goes where it resolves
under the pre-move index, which is how readers understood it until now. Every link keeps pointing
at that document afterwards: links to a moved document follow it, a moved document's own links are
re-spelled for where its text will live, and a link that a moved document would capture is pinned.
A link with a moving end is spelled afresh in its own style (the shortest relative form for './' and
'../' links, the path from the folder root for paths, the bare name while it is unambiguous), so
moving something and back restores the texts. New spellings are checked against the post-move
view (``LinkIndex.with_moves``). Links between documents that stay put are left as written unless
a moved document would capture them.

Only the target text inside each token changes; '!', brackets, heading, alias, a table-escaped
pipe and any surrounding whitespace stay byte-exact. Edits come back as ``TextEdit`` ranges in
Python str indices so a caller can apply them surgically to a CRDT text (converting each index to
the CRDT's own units first) and keep every untouched character's identity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lensrelay.links.resolve import LinkIndex, LinkResolver, LinkTarget, match_key
from lensrelay.text.vaultpath import has_md_suffix
from lensrelay.text.wikilinks import extract_wikilinks, target_span

# Characters a wikilink target cannot carry: they end the target or the token.
_UNWRITABLE = frozenset("[]|#\n\r")


@dataclass(frozen=True)
class TextEdit:
    """Replace ``text[start:end]`` (Python str indices) with ``replacement``."""

    start: int
    end: int
    replacement: str


def _relative_spelling(source: LinkTarget, new: LinkTarget) -> str:
    """The shortest './' or '../' spelling; across folders it climbs to the vault root, where every
    shared folder is a sibling directory."""
    source_dir = [source.folder, *source.path.split("/")[1:-1]]
    destination = [new.folder, *new.path.split("/")[1:]]
    common = 0
    while (
        common < len(source_dir)
        and common < len(destination) - 1
        and source_dir[common] == destination[common]
    ):
        common += 1
    ups = len(source_dir) - common
    rest = "/".join(destination[common:])
    return "../" * ups + rest if ups else "./" + rest


def _md_as_original(spelling: str, original: str) -> str:
    # '.md' appears in the new link only if the author wrote it in the old one.
    if not has_md_suffix(original) and has_md_suffix(spelling):
        return spelling[:-3]
    return spelling


def _style(original: str, via: str | None, written_in: LinkTarget) -> str:
    """How the author spelled a link, as far as it was their choice."""
    if original.startswith("/"):
        return "absolute"
    if "/" not in original:
        return "name"
    if original.split("/")[0] in (".", ".."):
        return "explicit relative"
    if via == "relative":
        return "below"
    if via == "basename":
        return "partial"  # Obsidian's shortest form with a directory or two ("Deep/Dive")
    if via == "virtual" and match_key(original.split("/")[0]) == match_key(written_in.folder):
        return "virtual"  # the folder's own name in front; a link into another folder needs one anyway
    return "path"


def _candidate_spellings(original: str, style: str, source: LinkTarget, new: LinkTarget) -> list[str]:
    """Writable spellings of ``new``: the original link's style first, then the plain path from
    the folder root (or ``Folder/path`` across folders), then the virtual-tree form."""
    same_folder = new.folder == source.folder
    virtual = new.folder + new.path
    path_form = new.path[1:] if same_folder else virtual
    relative = _relative_spelling(source, new)
    spellings: list[str] = []
    if style == "absolute":
        spellings.append("/" + path_form)
    elif style == "name":
        spellings.append(new.path.rpartition("/")[2])
    elif style == "explicit relative":
        spellings.append(relative)
    elif style == "below" and relative.startswith("./") and "/" in relative[2:]:
        spellings.append(relative[2:])  # a bare name would read as the "name" style
    elif style == "virtual":
        spellings.append(virtual)
    elif style == "partial":
        spellings.append("/".join(new.path.split("/")[1:][-len(original.strip("/").split("/")) :]))
    spellings += [path_form, virtual]
    spellings = [_md_as_original(s, original) for s in spellings]
    return [s for s in dict.fromkeys(spellings) if not _UNWRITABLE.intersection(s)]


def _choose_spelling(
    original: str, style: str, *, source: LinkTarget, new: LinkTarget, after: LinkResolver
) -> str | None:
    """The first spelling that resolves to exactly ``new`` after the move. Failing that (names
    differing only by case), the first that reaches ``new`` at all; None if ``new`` cannot be
    written inside ``[[...]]``, in which case the link is left as it is."""
    spellings = _candidate_spellings(original, style, source, new)
    reaching_new: list[str] = []
    for spelling in spellings:
        resolution = after.resolve(source=source, target=spelling)
        if resolution.target == new:
            if not resolution.ambiguous:
                return spelling
            reaching_new.append(spelling)
    if reaching_new:
        return reaching_new[0]
    return spellings[0] if spellings else None


def _last_segment_keys(target_text: str) -> tuple[str, ...]:
    last = match_key(target_text.strip().rstrip("/").rpartition("/")[2])
    return (last, last + ".md")


class Relocation:
    """Documents about to move (old -> new), and the edits that keep every link pointing where it
    pointed. ``index`` must be the pre-move index."""

    def __init__(self, index: LinkIndex, moves: Mapping[LinkTarget, LinkTarget]) -> None:
        self.index = index
        self.moves = {old: new for old, new in moves.items() if old != new}
        self.after = index.with_moves(self.moves)
        self._new_names = {match_key(new.path.rpartition("/")[2]) for new in self.moves.values()}
        self._names = self._new_names | {match_key(old.path.rpartition("/")[2]) for old in self.moves}
        stems = {name[:-3] if name.endswith(".md") else name for name in self._names}
        # Checking a text for a few names is far cheaper than parsing it; a whole sub-folder's worth
        # of names is not, and then every text is parsed.
        self._stems = stems if len(stems) <= 32 else None

    def where(self, target: LinkTarget) -> LinkTarget:
        """Where a document will be once the moves are done."""
        return self.moves.get(target, target)

    def _may_concern(self, markdown: str, source: LinkTarget) -> bool:
        if source in self.moves or self._stems is None:
            return True
        text = match_key(markdown)
        return any(stem in text for stem in self._stems)

    def _new_spelling(self, source: LinkTarget, target_text: str) -> str | None:
        # Every rule ends on the last segment's name: a link naming no moved document, old or new,
        # from a document that stays, keeps resolving as it did.
        if source not in self.moves and not self._names.intersection(_last_segment_keys(target_text)):
            return None
        before = self.index.resolve(source=source, target=target_text)
        if before.target is None:
            return None
        if source not in self.moves and before.target not in self.moves:
            # Neither end moves: only a moved document taking the link's name can capture it, and
            # every rule ends on the last segment's name.
            if not self._new_names.intersection(_last_segment_keys(target_text)):
                return None
            now = self.after.resolve(source=source, target=target_text)
            if now.target == before.target and (before.ambiguous or not now.ambiguous):
                return None
        # One end moves: the link is spelled afresh in its own style, so moving back restores it.
        return _choose_spelling(
            target_text,
            _style(target_text.strip(), before.via, source),
            source=self.where(source),
            new=self.where(before.target),
            after=self.after,
        )

    def edits(self, markdown: str, *, source: LinkTarget) -> list[TextEdit]:
        """Edits, sorted by start, for the text of ``source`` (its pre-move location). Same-document
        links (``[[#heading]]``) need no change and are left alone."""
        if not self.moves or not self._may_concern(markdown, source):
            return []
        links = [link for link in extract_wikilinks(markdown) if link.target != ""]
        spelling_for: dict[str, str | None] = {}
        edits: list[TextEdit] = []
        for link in links:
            if link.target not in spelling_for:
                spelling_for[link.target] = self._new_spelling(source, link.target)
            spelling = spelling_for[link.target]
            if spelling is None:
                continue
            start, end = target_span(markdown, link)
            if markdown[start:end] != spelling:
                edits.append(TextEdit(start=start, end=end, replacement=spelling))
        return edits


def link_edits(
    markdown: str, *, source: LinkTarget, index: LinkIndex, old: LinkTarget, new: LinkTarget
) -> list[TextEdit]:
    """Edits, sorted by start, that keep every link in ``markdown`` (the text of ``source``) pointing
    where it did once ``old`` became ``new``. ``index`` must be the pre-move index. If ``source`` is
    ``old`` itself, spellings are chosen for where the text will live, ``new``."""
    return Relocation(index, {old: new}).edits(markdown, source=source)


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits given in ascending order."""
    pieces: list[str] = []
    position = 0
    for edit in edits:
        pieces.append(text[position : edit.start])
        pieces.append(edit.replacement)
        position = edit.end
    pieces.append(text[position:])
    return "".join(pieces)


def rewrite_links(
    markdown: str, *, source: LinkTarget, index: LinkIndex, old: LinkTarget, new: LinkTarget
) -> tuple[str, int]:
    """The text with links to ``old`` pointing at ``new``, and how many links changed.
    ``index`` must be the pre-move index (see link_edits)."""
    edits = link_edits(markdown, source=source, index=index, old=old, new=new)
    return apply_edits(markdown, edits), len(edits)
