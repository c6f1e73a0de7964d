"""The smallest edit from one text to another, as replacements applied to a live Y.Text.

Restoring a version must not replace the whole text: every character kept keeps its Yjs identity, so
connected clients' cursors and selections in unchanged parts stay where they are.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from pycrdt import Text

from lensrelay.docstore.offsets import text_replace

# Character-level matching above this many characters per changed block would be quadratic; such a
# block is replaced whole (its lines all differ anyway).
_CHAR_DIFF_LIMIT = 20_000


@dataclass(frozen=True)
class Replacement:
    """Replace current[start:end] (Python string indices) with `value`."""

    start: int
    end: int
    value: str


def text_edits(current: str, target: str) -> list[Replacement]:
    """Non-overlapping replacements, in ascending order, that turn `current` into `target`."""
    lead = 0
    limit = min(len(current), len(target))
    while lead < limit and current[lead] == target[lead]:
        lead += 1
    trail = 0
    while trail < limit - lead and current[-1 - trail] == target[-1 - trail]:
        trail += 1
    old, new = current[lead : len(current) - trail], target[lead : len(target) - trail]
    if not old and not new:
        return []
    edits: list[Replacement] = []
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    old_at, new_at = _starts(old_lines), _starts(new_lines)
    lines = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in lines.get_opcodes():
        if tag == "equal":
            continue
        o1, o2, n1, n2 = old_at[i1], old_at[i2], new_at[j1], new_at[j2]
        edits += _char_edits(old[o1:o2], new[n1:n2], offset=lead + o1)
    return edits


def _starts(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def _char_edits(old: str, new: str, *, offset: int) -> list[Replacement]:
    if not old or not new or len(old) + len(new) > _CHAR_DIFF_LIMIT:
        return [Replacement(offset, offset + len(old), new)]
    chars = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [
        Replacement(offset + i1, offset + i2, new[j1:j2])
        for tag, i1, i2, j1, j2 in chars.get_opcodes()
        if tag != "equal"
    ]


def text_apply_edits(ytext: Text, *, current: str, edits: list[Replacement]) -> str:
    """Apply `edits` (from text_edits on `current`, which is `str(ytext)` now); returns the new text.

    Right to left, so each edit's indices still hold when it is applied.
    """
    for edit in reversed(edits):
        current = text_replace(ytext, current=current, start=edit.start, end=edit.end, value=edit.value)
    return current
