"""The records a suggestion row keeps in its JSON fields, typed: one ``HunkRecord`` per proposed hunk
(``Suggestion.hunks``) and an ``UndoRecord`` for its last decision (``Suggestion.undo``).

TypedDicts rather than dataclasses: the rows store exactly these dicts, so what is written and read back
stays the JSON it always was, with no conversion on either side. Rows written before a key existed may
lack it, which is why readers keep using ``.get`` with a default for the optional keys.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class HunkRecord(TypedDict):
    """One hunk as proposed: its base and new text, where its markup sits and the words around it."""

    old: str
    new: str
    # Yjs sticky positions (pycrdt ``StickyIndex.to_json()``) of the markup's start and end, so the follower
    # finds the marks again after edits around them.
    start: NotRequired[dict[str, Any]]
    end: NotRequired[dict[str, Any]]
    # The accepted view's words right before and after the hunk, for previews.
    before: NotRequired[str]
    after: NotRequired[str]


class RegionRecord(TypedDict):
    """A settled region of a decision (see ``undo_record``): where it was, the text around it that must
    still read the same, the text the decision left there, and the pieces it removed as
    ``[offset in the region, text]`` (lists, as JSON keeps pairs)."""

    at: int
    before: str
    settled: str
    after: str
    pieces: list[list[int | str]]


class UndoRecord(TypedDict, total=False):
    """How to undo a row's last decision: the regions it settled in the note (an empty list: it changed
    no note, so undo makes the row pending again). Empty (no ``regions``): nothing to undo from here."""

    regions: list[RegionRecord]
