"""Pure text edits: the smallest edit between two texts, and a local edit carried onto a document that changed
meanwhile, the way Yjs would merge the two (nothing either side inserted is lost).

Positions are Python string indices (code points) everywhere here; the conversion to the UTF-8 byte offsets
pycrdt expects happens only where a Y.Text is edited (`lensrelay_sync.docs.apply_ops`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate

from lensrelay.text.common_ends import common_prefix, common_suffix

# A changed block of lines up to this size is diffed again by words (difflib is quadratic in the worst case).
_WORD_DIFF_UP_TO = 20_000
_WORDS = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class Hunk:
    """Replace ``old[start:end]`` by ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Op:
    """At ``pos`` of the current text, delete ``delete`` characters, then insert ``insert``."""

    pos: int
    delete: int
    insert: str


def _trimmed(old: str, new: str, offset: int) -> Hunk | None:
    p = common_prefix(old, new)
    s = common_suffix(old, new, min(len(old), len(new)) - p)
    if p == len(old) == len(new):
        return None
    return Hunk(offset + p, offset + len(old) - s, new[p : len(new) - s])


def text_edits(old: str, new: str) -> list[Hunk]:
    """The edits that turn ``old`` into ``new``: sorted, non-overlapping hunks in ``old``'s positions.

    The common prefix and suffix are never touched; inside, a line diff and then a word diff of each changed
    block find every stretch that stayed, so a change scattered over a note becomes one small hunk per
    changed stretch and the text between them keeps its identity (and what others typed there survives).
    """
    whole = _trimmed(old, new, 0)
    if whole is None:
        return []
    a, b = old[whole.start : whole.end], whole.text
    if not a or not b:
        return [whole]
    hunks: list[Hunk] = []
    for i1, i2, j1, j2 in _changed(a.splitlines(keepends=True), b.splitlines(keepends=True)):
        block_a, block_b = a[i1:i2], b[j1:j2]
        at = whole.start + i1
        if not block_a or not block_b or len(block_a) + len(block_b) > _WORD_DIFF_UP_TO:
            hunk = _trimmed(block_a, block_b, at)
            if hunk is not None:
                hunks.append(hunk)
            continue
        for k1, k2, l1, l2 in _changed(_WORDS.findall(block_a), _WORDS.findall(block_b)):
            hunk = _trimmed(block_a[k1:k2], block_b[l1:l2], at + k1)
            if hunk is not None:
                hunks.append(hunk)
    return hunks


def _changed(a: list[str], b: list[str]) -> Iterator[tuple[int, int, int, int]]:
    """The changed stretches between two token lists, as character ranges of their joined texts."""
    if len(a) < 2 and len(b) < 2:
        yield 0, sum(map(len, a)), 0, sum(map(len, b))
        return
    a_at = [0, *accumulate(map(len, a))]
    b_at = [0, *accumulate(map(len, b))]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            yield a_at[i1], a_at[i2], b_at[j1], b_at[j2]


def apply_hunks(old: str, hunks: Sequence[Hunk]) -> str:
    out, at = [], 0
    for hunk in hunks:
        out.append(old[at : hunk.start])
        out.append(hunk.text)
        at = hunk.end
    out.append(old[at:])
    return "".join(out)


def apply_ops(text: str, ops: Sequence[Op]) -> str:
    """Apply ops given in ascending, non-overlapping order (as `rebase` returns them)."""
    for op in reversed(ops):
        text = text[: op.pos] + op.insert + text[op.pos + op.delete :]
    return text


class _Map:
    """Positions of ``base`` in ``current``, from the hunks that turned one into the other."""

    def __init__(self, remote: Sequence[Hunk]) -> None:
        self.remote = remote

    def position(self, i: int) -> int:
        """Where an insertion at ``base`` boundary ``i`` goes in ``current``: after any remote insertion at
        the same place, and after a remote replacement that swallowed ``i``."""
        delta = 0
        for h in self.remote:
            if h.start > i:
                break
            if h.end > i and h.start < i:  # inside a stretch the other side replaced
                return h.start + delta + len(h.text)
            if h.start == i and h.end > i:  # the other side replaced what starts here: go before it
                break
            delta += len(h.text) - (h.end - h.start)
        return i + delta

    def kept(self, start: int, end: int) -> list[tuple[int, int]]:
        """The stretches of ``base[start:end]`` the other side did not delete, as current ranges."""
        pieces: list[tuple[int, int]] = []
        at, delta = start, 0
        for h in self.remote:
            if h.end <= at:
                delta += len(h.text) - (h.end - h.start)
                continue
            if h.start >= end:
                break
            if h.start > at:
                pieces.append((at + delta, h.start + delta))
            delta += len(h.text) - (h.end - h.start)
            at = max(at, h.end)
        if at < end:
            pieces.append((at + delta, end + delta))
        return pieces


def rebase(base: str, local: str, current: str) -> list[Op]:
    """The edits that carry the change ``base`` → ``local`` onto ``current`` (``base`` changed elsewhere).

    As a Yjs merge does: characters the local side deleted are deleted where they still are; what the other
    side inserted, even inside a stretch the local side replaced, stays; the local insertions go where their
    place is now. Unlike a Yjs merge, a change both sides made alike (the same stretch replaced by the same
    text, such as a link that Obsidian and the server both rewrote after a rename) is made once.

    Returns ascending, non-overlapping ops in ``current``'s positions; with ``current == base`` they are
    exactly the smallest edit from ``base`` to ``local``.
    """
    local_hunks = text_edits(base, local)
    if not local_hunks:
        return []
    if current == base:
        return [Op(h.start, h.end - h.start, h.text) for h in local_hunks]
    theirs = text_edits(base, current)
    where = _Map(theirs)
    alike = set(theirs)
    ops: list[Op] = []
    for hunk in local_hunks:
        if hunk in alike:
            continue  # the same change made on both sides (a link both rewrote) is made once
        at = where.position(hunk.start)
        pieces = where.kept(hunk.start, hunk.end)
        if pieces and pieces[0][0] == at:
            first = pieces.pop(0)
            ops.append(Op(at, first[1] - first[0], hunk.text))
        elif hunk.text:
            ops.append(Op(at, 0, hunk.text))
        ops.extend(Op(s, e - s, "") for s, e in pieces)
    ops.sort(key=lambda op: (op.pos, op.delete))
    return _merged(ops)


def _merged(ops: list[Op]) -> list[Op]:
    """Join ops that touch (an insertion right before a deletion at the same place)."""
    out: list[Op] = []
    for op in ops:
        if out and out[-1].pos + out[-1].delete == op.pos and not op.insert and op.delete:
            last = out[-1]
            out[-1] = Op(last.pos, last.delete + op.delete, last.insert)
        elif out and out[-1].pos == op.pos and not out[-1].delete and not op.insert:
            out[-1] = Op(op.pos, op.delete, out[-1].insert)
        else:
            out.append(op)
    return out


def edit_size(old: str, new: str) -> int:
    """How many characters the smallest edit from ``old`` to ``new`` deletes and inserts."""
    return sum(h.end - h.start + len(h.text) for h in text_edits(old, new))


def base_of_save(*, written: str, replaced: str, saved: str) -> str:
    """Which text a save that came right after this client wrote the file was made from.

    An editor that had read the file before the write (``replaced``) and saves its buffer afterwards drops
    what the write brought, though nobody deleted it: taken as an edit of ``written`` it would delete the
    other side's change. The save is an edit of the text it is closer to; a tie keeps ``written``.
    """
    if edit_size(replaced, saved) < edit_size(written, saved):
        return replaced
    return written
