"""Word-level diff, and rendering a change as CriticMarkup suggestion hunks.

Tokens are words, whitespace runs and single grapheme clusters of anything else (punctuation, emoji), so
a diff never splits an accented letter, an emoji sequence or a flag. Scripts written without spaces (Han,
kana, Thai and their neighbours) are diffed one character at a time, which is their word level.

Changed runs separated only by spaces merge into one hunk, so ``The quick brown fox`` becoming
``A slow red fox`` is one ``{--The quick brown--}{++A slow red++} fox``. Runs separated by a line break
stay separate hunks, so a mark never swallows a heading or list marker on the next line.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import regex

from suggestions.markup.criticmarkup import CLOSE_ADDITION, CLOSE_DELETION, OPEN_ADDITION, OPEN_DELETION

_SPACELESS_SCRIPTS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Bopomofo}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_WORD_CHAR = rf"(?:(?![{_SPACELESS_SCRIPTS}])[\w\p{{M}}])"
_TOKEN_RE = regex.compile(
    r"\s+"
    rf"|[{_SPACELESS_SCRIPTS}]\p{{M}}*"
    # A word may carry inner apostrophes (don't, l'été) so a contraction changes as one word.
    rf"|{_WORD_CHAR}+(?:['\u2019]{_WORD_CHAR}+)*"
    r"|\X"
)
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
# Above this many units on both sides of a changed block, difflib may skip very common units as anchors.
_EXACT_DIFF_UNITS = 2000
# A changed block this many characters long (after its shared edges are cut) is one hunk: tokenizing and
# word-diffing megabytes costs seconds, and nobody reviews a rewrite that size word by word.
WHOLE_BLOCK_CHARS = 64 * 1024
# How far back from a shared edge a token boundary is looked for before the edge is not cut at all.
_CUT_SEARCH = 10_000
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@dataclass(frozen=True)
class Hunk:
    """Replace ``old[start:end]`` (== ``self.old``) with ``self.new``."""

    start: int
    end: int
    old: str
    new: str


@dataclass(frozen=True)
class TextEdit:
    """Replace ``text[start:end]`` with ``insert``; an insertion when ``start == end``."""

    start: int
    end: int
    insert: str


def tokenize(text: str) -> list[str]:
    """Words, whitespace runs and single graphemes; ``"".join(tokenize(t)) == t``."""
    return _TOKEN_RE.findall(text)


def _units(text: str) -> list[str]:
    """Diff units: a token together with the spaces after it; line breaks stay units of their own.

    Matching units instead of bare tokens keeps whitespace from being the most common element, which
    would make difflib quadratic on long texts; hunk edges are trimmed token by token afterwards.
    """
    units: list[str] = []
    for token in tokenize(text):
        if token.isspace() and units and not units[-1].isspace() and not _has_line_break(token):
            units[-1] += token
        else:
            units.append(token)
    return units


def _has_line_break(text: str) -> bool:
    return any(ch in _LINE_BREAKS for ch in text)


def _offsets(pieces: list[str], base: int) -> list[int]:
    offsets = [base]
    for piece in pieces:
        offsets.append(offsets[-1] + len(piece))
    return offsets


def _mergeable_gap(gap: str) -> bool:
    return gap == "" or (gap.isspace() and not _has_line_break(gap))


def shared_edges(old: Sequence[object], new: Sequence[object]) -> tuple[int, int]:
    """How many leading and (then) trailing items ``old`` and ``new`` share; they never overlap."""
    lead = 0
    while lead < min(len(old), len(new)) and old[lead] == new[lead]:
        lead += 1
    trail = 0
    while trail < min(len(old), len(new)) - lead and old[-1 - trail] == new[-1 - trail]:
        trail += 1
    return lead, trail


def _trim_common_tokens(old: str, new: str, run: tuple[int, int, int, int]) -> Hunk:
    """Move tokens both sides share at a hunk's edges (mostly spaces) out of the hunk."""
    o1, o2, n1, n2 = run
    old_tokens, new_tokens = tokenize(old[o1:o2]), tokenize(new[n1:n2])
    lead, trail = shared_edges(old_tokens, new_tokens)
    o1 += sum(map(len, old_tokens[:lead]))
    n1 += sum(map(len, new_tokens[:lead]))
    o2 -= sum(map(len, old_tokens[len(old_tokens) - trail :]))
    n2 -= sum(map(len, new_tokens[len(new_tokens) - trail :]))
    return Hunk(o1, o2, old[o1:o2], new[n1:n2])


def _changed_line_blocks(old: str, new: str) -> list[tuple[int, int, int, int]]:
    """Character ranges of the line blocks that differ; unchanged lines never reach the word diff."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    old_at, new_at = _offsets(old_lines, 0), _offsets(new_lines, 0)
    # Default autojunk: in long documents blank lines are too common to be useful anchors.
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines)
    blocks = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 - i1 == j2 - j1 > 1:
            # As many lines on both sides: each line changed in place (a replace_all, say). Diffing them
            # pairwise keeps the word diff linear where one block of thousands of lines would not be.
            blocks += [
                (old_at[i], old_at[i + 1], new_at[j], new_at[j + 1])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
        else:
            blocks.append((old_at[i1], old_at[i2], new_at[j1], new_at[j2]))
    return blocks


def common_prefix_length(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share, by bisection over C-speed slice comparisons."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def common_suffix_length(a: str, b: str, limit: int) -> int:
    low, high = 0, min(len(a), len(b), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle - 1
    return low


def _is_cut(text: str, position: int) -> bool:
    """Whether a token always ends at ``position``, whatever precedes it: a letter, digit or ASCII mark
    followed by whitespace (no word, grapheme or spaceless-script token runs on into a space)."""
    before = text[position - 1]
    return text[position].isspace() and (before.isalnum() or before in _ASCII_PUNCTUATION)


def _cut_shared_edges(old: str, new: str, block: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """The block without the characters both sides share at its edges, cut where a token boundary is the
    same in both texts, so the word diff of what is left sees the tokens the whole block would have."""
    o1, o2, n1, n2 = block
    old_block, new_block = old[o1:o2], new[n1:n2]
    old_length, new_length = len(old_block), len(new_block)
    shared = common_prefix_length(old_block, new_block)
    lead = 0
    for position in range(shared, max(0, shared - _CUT_SEARCH), -1):
        if (
            position < old_length
            and position < new_length
            and _is_cut(old_block, position)
            and _is_cut(new_block, position)
        ):
            lead = position
            break
    shared = common_suffix_length(old_block, new_block, min(old_length, new_length) - lead)
    trail = 0
    for length in range(shared, max(0, shared - _CUT_SEARCH), -1):
        if (
            old_length - length > lead
            and new_length - length > lead
            and _is_cut(old_block, old_length - length)
            and _is_cut(new_block, new_length - length)
        ):
            trail = length
            break
    return o1 + lead, o2 - trail, n1 + lead, n2 - trail


def _block_runs(old: str, new: str, block: tuple[int, int, int, int]) -> list[tuple[int, int, int, int]]:
    if max(block[1] - block[0], block[3] - block[2]) > WHOLE_BLOCK_CHARS:
        block = _cut_shared_edges(old, new, block)
        if max(block[1] - block[0], block[3] - block[2]) > WHOLE_BLOCK_CHARS:
            return [block]
    o1, o2, n1, n2 = block
    old_units, new_units = _units(old[o1:o2]), _units(new[n1:n2])
    # Shared leading and trailing units cost nothing to skip and shrink what difflib has to search.
    lead = 0
    while lead < min(len(old_units), len(new_units)) and old_units[lead] == new_units[lead]:
        lead += 1
    trail = 0
    while (
        trail < min(len(old_units), len(new_units)) - lead and old_units[-1 - trail] == new_units[-1 - trail]
    ):
        trail += 1
    old_at = _offsets(old_units, o1)
    new_at = _offsets(new_units, n1)
    old_core = old_units[lead : len(old_units) - trail]
    new_core = new_units[lead : len(new_units) - trail]
    # Exact matching for edit-sized texts; a huge rewritten block drops very common units as anchors.
    large = len(old_core) + len(new_core) > _EXACT_DIFF_UNITS
    matcher = difflib.SequenceMatcher(None, old_core, new_core, autojunk=large)
    runs: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = old_at[lead + i1], old_at[lead + i2]
        new_start, new_end = new_at[lead + j1], new_at[lead + j2]
        if runs and _mergeable_gap(old[runs[-1][1] : start]):
            runs[-1] = (runs[-1][0], end, runs[-1][2], new_end)
        else:
            runs.append((start, end, new_start, new_end))
    return runs


def _tightened(hunk: Hunk) -> Hunk:
    """A hunk that only adds or only removes text once the graphemes both sides share at its edges are
    left out, as exactly that: ``keep delete me keep`` → ``keepkeep`` deletes `` delete me `` and
    inserts nothing, rather than ``{-- delete me --}{++  ++}``. Other hunks stay word-level."""
    old_g, new_g = regex.findall(r"\X", hunk.old), regex.findall(r"\X", hunk.new)
    lead, trail = shared_edges(old_g, new_g)
    if lead + trail not in (len(old_g), len(new_g)):
        return hunk
    head = len("".join(old_g[:lead]))
    old_core = "".join(old_g[lead : len(old_g) - trail])
    new_core = "".join(new_g[lead : len(new_g) - trail])
    # Only whole words (and spaces) come out: ``cat`` → ``cats`` stays ``{--cat--}{++cats++}``.
    side, core = (hunk.old, old_core) if old_core else (hunk.new, new_core)
    boundaries = set(_offsets(tokenize(side), 0))
    if head not in boundaries or head + len(core) not in boundaries:
        return hunk
    return Hunk(hunk.start + head, hunk.start + head + len(old_core), old_core, new_core)


def word_hunks(old: str, new: str) -> list[Hunk]:
    """The word-level changes turning ``old`` into ``new``, as ranges of ``old``, in order."""
    if old == new:
        return []
    hunks: list[Hunk] = []
    for block in _changed_line_blocks(old, new):
        for run in _block_runs(old, new, block):
            if _is_whole(run):  # its shared edges are cut already
                hunks.append(Hunk(run[0], run[1], old[run[0] : run[1]], new[run[2] : run[3]]))
            else:
                hunks.append(_trim_common_tokens(old, new, run))
    touching: list[Hunk] = []
    for hunk in hunks:
        if hunk.old == hunk.new:
            continue
        if touching and touching[-1].end == hunk.start:
            # Neighbouring lines changed in place: one hunk, so no two marks meet at the same point.
            last = touching.pop()
            hunk = Hunk(last.start, hunk.end, last.old + hunk.old, last.new + hunk.new)
        touching.append(hunk)
    tightened = [
        hunk if _is_whole((0, len(hunk.old), 0, len(hunk.new))) else _tightened(hunk) for hunk in touching
    ]
    return [
        _slid_past_punctuation(old, hunk, tightened[i + 1] if i + 1 < len(tightened) else None)
        for i, hunk in enumerate(tightened)
    ]


def _slid_past_punctuation(old: str, hunk: Hunk, following: Hunk | None) -> Hunk:
    """A pure insertion moved right past the punctuation it starts with, where ``old`` has the same mark
    there: a sentence appended after ``The end.`` reads ``The end.{++ More.++}``, not the equivalent
    ``The end{++. More++}.`` that the diff finds (matching the final stop). Never past a letter or digit
    (a word is not split), a line break, or up to the next hunk (two marks would meet)."""
    if hunk.old or not hunk.new:
        return hunk
    at, text = hunk.start, hunk.new
    limit = following.start if following is not None else len(old) + 1
    while (
        at < len(old)
        and at + 1 < limit
        and text[0] == old[at]
        and not old[at].isalnum()
        and not _has_line_break(old[at])
    ):
        text = text[1:] + old[at]
        at += 1
    return hunk if at == hunk.start else Hunk(at, at, "", text)


def _is_whole(run: tuple[int, int, int, int]) -> bool:
    return max(run[1] - run[0], run[3] - run[2]) > WHOLE_BLOCK_CHARS


def suggestion_edits(old: str, new: str, *, meta: str) -> list[TextEdit]:
    """Pure insertions (descending) that turn ``old`` into its suggestion markup.

    The replaced words stay where they are and become the deletion's content, so a caller writing into
    a live document keeps their identity and a later reject only removes markers.
    """
    edits: list[TextEdit] = []
    for hunk in word_hunks(old, new):
        addition = f"{OPEN_ADDITION}{meta}{hunk.new}{CLOSE_ADDITION}" if hunk.new else ""
        if hunk.old:
            edits.append(TextEdit(hunk.start, hunk.start, f"{OPEN_DELETION}{meta}"))
            edits.append(TextEdit(hunk.end, hunk.end, f"{CLOSE_DELETION}{addition}"))
        else:
            edits.append(TextEdit(hunk.start, hunk.start, addition))
    edits.reverse()
    return edits


def apply_text_edits(text: str, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits given in any order."""
    pieces: list[str] = []
    position = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < position or edit.end < edit.start or edit.end > len(text):
            raise ValueError(f"overlapping or out-of-range edit {edit}")
        pieces.append(text[position : edit.start])
        pieces.append(edit.insert)
        position = edit.end
    pieces.append(text[position:])
    return "".join(pieces)


def render_suggestion(old: str, new: str, *, meta: str) -> str:
    """``old`` with each word-level hunk written as ``{--meta old--}{++meta new++}``."""
    return apply_text_edits(old, suggestion_edits(old, new, meta=meta))


def unified_diff(old: str, new: str, *, path: str) -> str:
    """A git-style unified diff of two texts, for dry runs."""
    name = path.lstrip("/")
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
