"""Rewrite wikilinks when the document they point at is renamed or moved.

Call these with the index as it was BEFORE the move: a link is rewritten when it resolves to
``old`` under the pre-move index, which is how readers understood it until now. The new spelling
is checked against the post-move view (``LinkIndex.with_move``) so it resolves to ``new``.

Only the target text inside each token changes; '!', brackets, heading, alias, a table-escaped
pipe and any surrounding whitespace stay byte-exact. Edits come back as ``TextEdit`` ranges in
Python str indices so a caller can apply them surgically to a CRDT text (converting each index to
the CRDT's own units first) and keep every untouched character's identity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lensrelay.links.parse import extract_wikilinks, target_span
from lensrelay.links.resolve import LinkIndex, LinkResolver, LinkTarget
from lensrelay.vaultpath import has_md_suffix

# Characters a wikilink target cannot carry: they end the target or the token.
_UNWRITABLE = frozenset("[]|#\n\r")


@dataclass(frozen=True)
class TextEdit:
    """Replace ``text[start:end]`` (Python str indices) with ``replacement``."""

    start: int
    end: int
    replacement: str


def _relative_spelling(source: LinkTarget, new: LinkTarget) -> str:
    source_dir = source.path.split("/")[1:-1]
    destination = new.path.split("/")[1:]
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


def _candidate_spellings(original: str, via: str | None, source: LinkTarget, new: LinkTarget) -> list[str]:
    """Writable spellings of ``new``: the original link's style first, then the plain path from
    the folder root (or ``Folder/path`` across folders), then the virtual-tree form."""
    same_folder = new.folder == source.folder
    virtual = new.folder + new.path
    path_form = new.path[1:] if same_folder else virtual
    spellings: list[str] = []
    if original.startswith("/"):
        spellings.append("/" + path_form)
    elif "/" not in original:
        spellings.append(new.path.rpartition("/")[2])
    elif original.split("/")[0] in (".", "..") and same_folder:
        spellings.append(_relative_spelling(source, new))
    elif via == "virtual":
        spellings.append(virtual)
    spellings += [path_form, virtual]
    spellings = [_md_as_original(s, original) for s in spellings]
    return [s for s in dict.fromkeys(spellings) if not _UNWRITABLE.intersection(s)]


def _choose_spelling(
    original: str, via: str | None, *, source: LinkTarget, new: LinkTarget, after: LinkResolver
) -> str | None:
    """The first spelling that resolves to exactly ``new`` after the move. Failing that (names
    differing only by case), the first that reaches ``new`` at all; None if ``new`` cannot be
    written inside ``[[...]]``, in which case the link is left as it is."""
    spellings = _candidate_spellings(original, via, source, new)
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


def link_edits(
    markdown: str, *, source: LinkTarget, index: LinkIndex, old: LinkTarget, new: LinkTarget
) -> list[TextEdit]:
    """Edits, sorted by start, that make every link in ``markdown`` (the text of ``source``)
    that resolves to ``old`` point at ``new``. ``index`` must be the pre-move index.

    If ``source`` is ``old`` itself (a document linking to itself is being moved), spellings are
    chosen for where the text will live, ``new``. Same-document links (``[[#heading]]``) need no
    change and are left alone.
    """
    if old == new:
        return []
    links = [link for link in extract_wikilinks(markdown) if link.target != ""]
    if not links:
        return []
    after = index.with_move(old, new)
    source_after = new if source == old else source
    spelling_for: dict[str, str | None] = {}
    edits: list[TextEdit] = []
    for link in links:
        if link.target not in spelling_for:
            resolution = index.resolve(source=source, target=link.target)
            spelling_for[link.target] = (
                _choose_spelling(link.target, resolution.via, source=source_after, new=new, after=after)
                if resolution.target == old
                else None
            )
        spelling = spelling_for[link.target]
        if spelling is None:
            continue
        start, end = target_span(markdown, link)
        if markdown[start:end] != spelling:
            edits.append(TextEdit(start=start, end=end, replacement=spelling))
    return edits


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
