"""What a decision removed from a note, kept so that it can be written back exactly (undo).

A decision deletes spans of markup (markers, metadata, the discarded side). For each change it decided, the
record keeps the *settled region*, the text the decision left between the first and the last deleted span,
with the deleted pieces and where they go inside it, and a little of the text on either side. Undo finds
the region again by that text (the occurrence nearest to where it was) and inserts the pieces back only
while the region and its surroundings are exactly as the decision left them: no kept character is touched,
so the rest of the note keeps its Yjs identity.

(Not Yjs sticky positions: pycrdt 0.14 resolves them in a mix of UTF-8 and UTF-16 units once a note holds
emoji or CJK, and panics on some; a text match is exact and says plainly what moved.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from suggestions.markup.criticmarkup import Span
from suggestions.markup.records import RegionRecord

# Enough to place the region among repeated words, short enough that edits nearby do not block undo; never
# past a line break, so edits on other lines never do.
CONTEXT_CHARS = 12


@dataclass(frozen=True)
class Region:
    """A settled region: ``[start, end)`` of the text after the decision, and the pieces it removed there
    as ``(offset in the region, text)``, ascending."""

    start: int
    end: int
    settled: str
    pieces: tuple[tuple[int, str], ...]


def settled_regions(raw: str, spans_per_change: Sequence[Sequence[Span]]) -> list[Region]:
    """The regions the deletions of ``spans_per_change`` (one list per change, the changes apart) leave in
    ``raw``, in the coordinates of the text after all of them."""
    changes = sorted(
        (sorted(spans, key=lambda s: s.start) for spans in spans_per_change if spans),
        key=lambda s: s[0].start,
    )
    regions: list[Region] = []
    removed_before = 0
    for spans in changes:
        first = spans[0].start
        pieces: list[tuple[int, str]] = []
        settled: list[str] = []
        position = first
        removed_inside = 0
        for span in spans:
            settled.append(raw[position : span.start])
            pieces.append((span.start - first - removed_inside, raw[span.start : span.end]))
            removed_inside += span.end - span.start
            position = span.end
        text = "".join(settled)
        start = first - removed_before
        regions.append(Region(start, start + len(text), text, tuple(pieces)))
        removed_before += removed_inside
    return regions


def recorded(text: str, regions: Sequence[Region]) -> list[RegionRecord]:
    """The regions as JSON, with their surroundings in ``text`` (the note right after the decision)."""
    return [
        {
            "at": region.start,
            "before": _line_tail(text[max(0, region.start - CONTEXT_CHARS) : region.start]),
            "settled": region.settled,
            "after": _line_head(text[region.end : region.end + CONTEXT_CHARS]),
            "pieces": [list(piece) for piece in region.pieces],
        }
        for region in regions
    ]


def _line_tail(text: str) -> str:
    return text[text.rfind("\n") :] if "\n" in text else text


def _line_head(text: str) -> str:
    return text[: text.find("\n") + 1] if "\n" in text else text


def located(raw: str, record: RegionRecord) -> int | None:
    """Where a recorded region starts in ``raw`` now (the match nearest to where it was), or None when
    the region or its surroundings no longer read as the decision left them."""
    before, settled, after = (str(record.get(key, "")) for key in ("before", "settled", "after"))
    needle = before + settled + after
    at = int(record.get("at", 0))
    best: int | None = None
    position = raw.find(needle)
    while position >= 0:
        start = position + len(before)
        if best is None or abs(start - at) < abs(best - at):
            best = start
        position = raw.find(needle, position + 1)
    return best


def insertions(start: int, record: RegionRecord) -> list[tuple[int, str]]:
    """The pieces of a region located at ``start``, as ``(index in the note, text)``."""
    return [(start + int(offset), str(text)) for offset, text in record.get("pieces", [])]


def pieces_back(raw: str, records: Sequence[RegionRecord]) -> list[tuple[int, str]] | None:
    """Where one decision's pieces go back into ``raw``, as ``(index, text)``; None if any of its
    regions is not found as the decision left it."""
    pieces: list[tuple[int, str]] = []
    for record in records:
        start = located(raw, record)
        if start is None:
            return None
        pieces += insertions(start, record)
    return pieces


def insert_all(raw: str, pieces: Sequence[tuple[int, str]]) -> str:
    """``raw`` with the pieces inserted (indices of ``raw``)."""
    result = raw
    for index, text in sorted(pieces, key=lambda p: p[0], reverse=True):
        result = result[:index] + text + result[index:]
    return result


def region_markup(record: RegionRecord) -> str:
    """The markup a recorded region held before the decision: its settled text with the pieces back."""
    return insert_all(str(record.get("settled", "")), insertions(0, record))
