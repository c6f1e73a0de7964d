"""Revising a pending suggestion's inserted text in place: what a reviewer does before accepting it with
changes, and what undoing that acceptance does to bring the original proposal back.

Only the inserted side of each change is rewritten, by the smallest edit (the characters the two texts
share at either end keep their identity in a live document); its deleted side, its metadata and every
other mark stay byte-identical. The result is parsed again and checked before anyone writes it, so text
that would assemble a delimiter with the markup around it is refused, never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from suggestions.errors import SuggestionError
from suggestions.markup.criticmarkup import Change, contains_delimiters, own_changes, parse
from suggestions.markup.diff import shared_edges, word_hunks

# A reviewer's revision is typed into a form field: a change this long is a rewrite, not a revision.
REVISION_MAX_CHARS = 100_000

NOTHING_INSERTED = (
    "part {number} of the suggestion only deletes text, so there is no inserted text to change there"
)
EMPTY = "the changed text of part {number} is empty: to keep none of what it inserts, reject the suggestion"
TOO_LONG = f"the changed text of part {{number}} is longer than {REVISION_MAX_CHARS:,} characters"
DELIMITER = (
    "the changed text of part {number} contains the CriticMarkup delimiter '{delimiter}': write plain text"
)
WRONG_COUNT = "the suggestion has {expected} part(s), but {given} changed text(s) were given"
UNSAFE = "the changed text would not stay inside the suggestion's markup (it would end or open a mark)"


@dataclass(frozen=True)
class RawReplacement:
    """Replace ``raw[start:end]`` with ``insert``."""

    start: int
    end: int
    insert: str


def revision_refusal(proposed: Sequence[str], revised: Sequence[str]) -> str | None:
    """Why ``revised`` (one text per part, in order) cannot replace the ``proposed`` inserted texts, or None.
    Checked before anything is claimed or written."""
    if len(proposed) != len(revised):
        return WRONG_COUNT.format(expected=len(proposed), given=len(revised))
    for number, (old, new) in enumerate(zip(proposed, revised, strict=True), start=1):
        if old == new:
            continue
        if not old:
            return NOTHING_INSERTED.format(number=number)
        if not new:
            return EMPTY.format(number=number)
        if len(new) > REVISION_MAX_CHARS:
            return TOO_LONG.format(number=number)
        delimiter = contains_delimiters(new)
        if delimiter is not None:
            return DELIMITER.format(number=number, delimiter=delimiter)
    return None


def _inserted_span(change: Change) -> tuple[int, int] | None:
    for mark in change.marks:
        if mark.kind == "addition":
            return mark.content_start, mark.content_end
        if mark.kind == "substitution" and mark.new_content_start is not None:
            return mark.new_content_start, mark.new_content_end or mark.new_content_start
    return None


def _smallest(raw: str, start: int, end: int, new: str) -> RawReplacement:
    """Replace ``raw[start:end]`` with ``new``, leaving out what both share at either end."""
    lead, trail = shared_edges(raw[start:end], new)
    return RawReplacement(start + lead, end - trail, new[lead : len(new) - trail])


def revision_edits(raw: str, uid: str, revised: Sequence[str]) -> list[RawReplacement]:
    """The edits of ``raw`` that make the suggestion ``uid``'s inserted texts read ``revised``, ascending.

    Raises SuggestionError when the suggestion's parts are not where they should be or when the revised
    markup would not parse back to exactly this suggestion with these texts, every other mark unchanged.
    """
    changes = own_changes(raw, uid)
    if len(changes) != len(revised):
        raise SuggestionError(WRONG_COUNT.format(expected=len(changes), given=len(revised)))
    edits: list[RawReplacement] = []
    for number, (change, new) in enumerate(zip(changes, revised, strict=True), start=1):
        if change.new == new:
            continue
        span = _inserted_span(change)
        if span is None:
            raise SuggestionError(NOTHING_INSERTED.format(number=number))
        edits.append(_smallest(raw, span[0], span[1], new))
    if edits:
        _check(raw, apply_replacements(raw, edits), uid, changes, revised)
    return edits


def apply_replacements(raw: str, edits: Sequence[RawReplacement]) -> str:
    pieces: list[str] = []
    position = 0
    for edit in sorted(edits, key=lambda e: e.start):
        pieces += [raw[position : edit.start], edit.insert]
        position = edit.end
    pieces.append(raw[position:])
    return "".join(pieces)


def _check(raw: str, written: str, uid: str, before: Sequence[Change], revised: Sequence[str]) -> None:
    after = own_changes(written, uid)
    if [(c.old, c.new) for c in after] != [(c.old, new) for c, new in zip(before, revised, strict=True)]:
        raise SuggestionError(UNSAFE)
    if len(parse(written)) != len(parse(raw)):
        raise SuggestionError(UNSAFE)


def revision_difference(proposed: str, accepted: str) -> str:
    """What the reviewer changed, word by word, as CriticMarkup of the proposed text: for the assistant."""
    pieces: list[str] = []
    position = 0
    for hunk in word_hunks(proposed, accepted):
        pieces.append(proposed[position : hunk.start])
        if hunk.old:
            pieces.append(f"{{--{hunk.old}--}}")
        if hunk.new:
            pieces.append(f"{{++{hunk.new}++}}")
        position = hunk.end
    pieces.append(proposed[position:])
    return "".join(pieces)


def revision_changes(proposed: Sequence[str], accepted: Sequence[str]) -> list[dict[str, str]]:
    """Each part the reviewer changed, as an assistant's notification and a webhook tell it."""
    return [
        {"proposed": old, "accepted": new, "difference": revision_difference(old, new)}
        for old, new in zip(proposed, accepted, strict=False)
        if old != new
    ]


def revision_summary(revised: Sequence[tuple[str, str]], *, limit: int = 200) -> str:
    """The differences of ``(proposed, accepted)`` pairs on one line (line breaks as ⏎), clipped."""
    flat = "; ".join(revision_difference(old, new) for old, new in revised).replace("\n", "⏎")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
