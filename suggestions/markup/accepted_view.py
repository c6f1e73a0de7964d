"""The accepted view: a document's text as if every pending suggestion were accepted.

Assistants read, grep and edit this view, so an ``old_string`` they copy must be found here and then
located in the raw text with its markup. The view is a list of pieces, each a run of kept characters that
maps one to one onto the raw text; the markup and discarded text between pieces have no view width.

A view index is a boundary between characters. Where markup sits at a boundary the raw position is
ambiguous: ``prefer="left"`` answers the position before the markup, ``prefer="right"`` the one after.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Literal

from suggestions.markup.criticmarkup import Change, Mark, parse_changes

Side = Literal["left", "right"]


@dataclass
class AcceptedView:
    raw: str
    text: str
    changes: list[Change]
    # change_spans[i] is where changes[i] sits in the view: (start, end), zero width when nothing is kept.
    change_spans: list[tuple[int, int]]
    _piece_view_starts: list[int] = field(repr=False)
    _piece_raw_starts: list[int] = field(repr=False)
    _piece_lengths: list[int] = field(repr=False)

    def _check_view_index(self, view_index: int) -> None:
        if not 0 <= view_index <= len(self.text):
            raise IndexError(f"view index {view_index} outside 0..{len(self.text)}")

    def to_raw(self, view_index: int, *, prefer: Side = "left") -> int:
        """The raw index of a view boundary; at markup, before it (left) or after it (right)."""
        self._check_view_index(view_index)
        starts = self._piece_view_starts
        if prefer == "left":
            # The piece whose last kept character ends at or after the boundary.
            k = bisect_left(starts, view_index) - 1
            if k < 0:
                return 0
        else:
            # The piece holding the character right after the boundary.
            k = bisect_right(starts, view_index) - 1
            if k < 0 or view_index >= starts[k] + self._piece_lengths[k]:
                return len(self.raw)
        return self._piece_raw_starts[k] + view_index - starts[k]

    def raw_range(self, view_start: int, view_end: int) -> tuple[int, int]:
        """The smallest raw range that shows as ``text[view_start:view_end]``.

        Markup at either edge is left out; markup strictly inside is included. An empty view range
        maps to an empty raw range before any markup at that point.
        """
        if view_start > view_end:
            raise ValueError("view_start after view_end")
        if view_start == view_end:
            point = self.to_raw(view_start, prefer="left")
            return point, point
        return self.to_raw(view_start, prefer="right"), self.to_raw(view_end, prefer="left")

    def to_view(self, raw_index: int) -> int:
        """The view boundary for a raw index; an index inside markup maps to where the markup shows."""
        if not 0 <= raw_index <= len(self.raw):
            raise IndexError(f"raw index {raw_index} outside 0..{len(self.raw)}")
        raw_starts = self._piece_raw_starts
        k = bisect_right(raw_starts, raw_index) - 1
        if k >= 0 and raw_index < raw_starts[k] + self._piece_lengths[k]:
            return self._piece_view_starts[k] + raw_index - raw_starts[k]
        if k + 1 < len(raw_starts):
            return self._piece_view_starts[k + 1]
        return len(self.text)


def _kept_ranges(change: Change) -> list[tuple[int, int]]:
    """The raw ranges of ``change`` that stay once it is accepted."""
    kept: list[tuple[int, int]] = []
    for mark in change.marks:
        kept_range = _kept_range(mark)
        if kept_range is not None and kept_range[1] > kept_range[0]:
            kept.append(kept_range)
    return kept


def _kept_range(mark: Mark) -> tuple[int, int] | None:
    if mark.kind in ("addition", "highlight"):
        return mark.content_start, mark.content_end
    if mark.kind == "substitution":
        assert mark.new_content_start is not None and mark.new_content_end is not None
        return mark.new_content_start, mark.new_content_end
    return None


def build_accepted_view(raw: str) -> AcceptedView:
    """Parse ``raw`` once and build the view with its position maps, in linear time."""
    changes = parse_changes(raw)
    parts: list[str] = []
    view_starts: list[int] = []
    raw_starts: list[int] = []
    lengths: list[int] = []
    change_spans: list[tuple[int, int]] = []
    view_length = 0

    def keep(start: int, end: int) -> None:
        nonlocal view_length
        if end <= start:
            return
        parts.append(raw[start:end])
        view_starts.append(view_length)
        raw_starts.append(start)
        lengths.append(end - start)
        view_length += end - start

    position = 0
    for change in changes:
        keep(position, change.start)
        change_view_start = view_length
        for start, end in _kept_ranges(change):
            keep(start, end)
        change_spans.append((change_view_start, view_length))
        position = change.end
    keep(position, len(raw))

    return AcceptedView(
        raw=raw,
        text="".join(parts),
        changes=changes,
        change_spans=change_spans,
        _piece_view_starts=view_starts,
        _piece_raw_starts=raw_starts,
        _piece_lengths=lengths,
    )


MARK_OPENERS = ("{++", "{--", "{~~", "{==", "{>>")


def accepted_text(raw: str) -> str:
    """The text as if every pending suggestion were accepted; the raw string itself when it has none."""
    if not any(opener in raw for opener in MARK_OPENERS):
        return raw
    return build_accepted_view(raw).text
