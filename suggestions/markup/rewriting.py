"""Planning a suggestion: the raw-text edits that write a change of the accepted view as CriticMarkup.

A document's raw text holds pending suggestions. Two views of it matter: the *accepted view* (every
pending suggestion accepted, what assistants read and edit) and the *base view* (every one rejected).
A new suggestion that turns the accepted view ``V`` into ``V'`` must leave

(a) ``accepted(raw') == V'`` exactly, and (b) ``base(raw') == base(raw)``;

every comment byte-identical where it was; every other suggestion's marks byte-identical, so each still
accepts and rejects on its own; no mark inside another. The plan is built to hold these and then checked
against them before anything is written; a plan that fails is refused, never written.

How: each changed range of ``V`` becomes a *region*, widened over the pending marks it really overlaps
(a mark that merely touches it stays outside). Overlapped marks are *absorbed*: their base text is
carried forward into the new suggestion, which supersedes them (their other marks elsewhere take the new
suggestion's metadata). Comments are never absorbed; the new markup is split around them. Inside a
region the base text is diffed against the new text and only markers, metadata and discarded text are
deleted, so every kept character keeps its identity in a live document.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from suggestions.errors import SuggestionError
from suggestions.markup.criticmarkup import (
    CLOSE_ADDITION,
    CLOSE_DELETION,
    DELIMITERS,
    OPEN_ADDITION,
    OPEN_DELETION,
    Mark,
    mark_id,
    parse,
    render_comment,
    resolve,
)
from suggestions.markup.diff import Hunk, word_hunks

_OPENING_WIDTH = 3
_DELIMITER_LOOKAHEAD = re.compile("(?=(" + "|".join(re.escape(d) for d in DELIMITERS) + "))")

FORGED = (
    "Refused: the change would put the CriticMarkup delimiter '{delimiter}' into the document, assembled "
    "from the new text and the text around it. Write plain text: the system handles suggestion wrapping "
    "automatically. Nothing was changed."
)
UNSAFE = (
    "Refused: {what}, so the suggestion cannot be written safely (the document may hold an unclosed "
    "CriticMarkup delimiter near the change). Nothing was changed."
)
ONLY_UNDOES = (
    "No changes to make: the edit only takes back pending suggestion(s) {uids}, leaving the text as it "
    "was before them. A reviewer can reject them."
)


@dataclass(frozen=True)
class RawEdit:
    """Replace ``raw[start:end]`` (markup or discarded text only) with ``insert``."""

    start: int
    end: int
    insert: str


@dataclass
class Plan:
    raw: str
    edits: list[RawEdit]
    superseded: list[str] = field(default_factory=list)


def apply_raw_edits(raw: str, edits: Sequence[RawEdit]) -> str:
    pieces: list[str] = []
    position = 0
    for edit in edits:
        pieces += [raw[position : edit.start], edit.insert]
        position = edit.end
    pieces.append(raw[position:])
    return "".join(pieces)


def accepted_of(raw: str) -> str:
    return resolve(raw, lambda mark: True)


def base_of(raw: str) -> str:
    return resolve(raw, lambda mark: False)


# -- where marks show in the view -------------------------------------------------------------------------


def _view_width(mark: Mark) -> int:
    if mark.kind in ("addition", "highlight"):
        return len(mark.content)
    if mark.kind == "substitution":
        return len(mark.new_content or "")
    return 0


@dataclass
class _Layout:
    """Each mark's view span, and the raw gaps between marks (the only places markup may be written)."""

    raw: str
    marks: list[Mark]
    spans: list[tuple[int, int]]
    gap_raw: list[int]  # gap k runs over raw [gap_raw[k], gap_end[k]] (both ends usable)
    gap_end: list[int]
    gap_view: list[int]  # the view index of gap_raw[k]
    gap_view_end: list[int] = field(init=False)
    span_starts: list[int] = field(init=False)
    span_ends: list[int] = field(init=False)
    mark_starts: list[int] = field(init=False)
    mark_ends: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.gap_view_end = [
            v + (e - r) for v, r, e in zip(self.gap_view, self.gap_raw, self.gap_end, strict=True)
        ]
        # Marks are in document order, so both ends of their view spans never decrease.
        self.span_starts = [start for start, _ in self.spans]
        self.span_ends = [end for _, end in self.spans]
        self.mark_starts = [m.start for m in self.marks]
        self.mark_ends = [m.end for m in self.marks]

    @classmethod
    def of(cls, raw: str) -> _Layout:
        marks = parse(raw)
        spans: list[tuple[int, int]] = []
        gap_raw, gap_end, gap_view = [0], [], [0]
        view = 0
        for mark in marks:
            view += mark.start - gap_raw[-1]
            gap_end.append(mark.start)
            width = _view_width(mark)
            spans.append((view, view + width))
            view += width
            gap_raw.append(mark.end)
            gap_view.append(view)
        gap_end.append(len(raw))
        return cls(raw, marks, spans, gap_raw, gap_end, gap_view)

    def first_gap_position(self, view_index: int) -> int:
        """The leftmost raw position outside every mark that shows as ``view_index``."""
        k = bisect_left(self.gap_view_end, view_index)
        return self.gap_raw[k] + view_index - self.gap_view[k]

    def last_gap_position(self, view_index: int) -> int:
        """The rightmost raw position outside every mark that shows as ``view_index``."""
        k = bisect_right(self.gap_view, view_index) - 1
        return self.gap_raw[k] + view_index - self.gap_view[k]

    def near(self, start: int, end: int) -> range:
        """The marks whose view span could overlap ``[start, end]``."""
        return range(bisect_left(self.span_ends, start), bisect_right(self.span_starts, end))

    def within(self, raw_start: int, raw_end: int) -> range:
        """The marks lying inside raw ``[raw_start, raw_end)``."""
        return range(bisect_left(self.mark_starts, raw_start), bisect_right(self.mark_ends, raw_end))


# -- regions -----------------------------------------------------------------------------------------------


@dataclass
class _Region:
    start: int  # view range [start, end)
    end: int
    hunks: list[Hunk]
    absorbed: set[int] = field(default_factory=set)


def _overlaps(span: tuple[int, int], start: int, end: int) -> bool:
    first, last = span
    if last > first:
        return max(first, start) < min(last, end) or (start == end and first < start < last)
    return start < first < end


def _widen(layout: _Layout, region: _Region) -> None:
    """Absorb every mark (comments excepted) the region overlaps, with the marks of the same change right
    beside it (a deletion and its insertion), widening it, until none is left."""
    changed = True
    while changed:
        changed = False
        for index in layout.near(region.start, region.end):
            mark, span = layout.marks[index], layout.spans[index]
            if index in region.absorbed or mark.kind == "comment":
                continue
            if _overlaps(span, region.start, region.end):
                for partner in _same_change(layout, index):
                    region.absorbed.add(partner)
                    first, last = layout.spans[partner]
                    region.start, region.end = min(region.start, first), max(region.end, last)
                changed = True


def _same_change(layout: _Layout, index: int) -> list[int]:
    """The mark and its neighbours of the same suggestion that touch it in the raw text: absorbed
    together, or the one left behind would stand beside the new markup as a second mark of the same
    change (``{--quick--}{-- brown--}``)."""
    marks = layout.marks
    uid = mark_id(marks[index])
    first = last = index
    if uid is not None:
        while first > 0 and marks[first - 1].end == marks[first].start and mark_id(marks[first - 1]) == uid:
            first -= 1
        while (
            last + 1 < len(marks)
            and marks[last].end == marks[last + 1].start
            and mark_id(marks[last + 1]) == uid
        ):
            last += 1
    return [i for i in range(first, last + 1) if marks[i].kind != "comment"]


def _raw_range(layout: _Layout, region: _Region) -> tuple[int, int]:
    """Where a region's markup is written: between the gaps at its view edges, and over every mark it
    absorbed (a deletion shows nowhere in the view, so the gap at its edge may lie past it)."""
    if region.start == region.end:
        start = end = layout.first_gap_position(region.start)
    else:
        start, end = layout.last_gap_position(region.start), layout.first_gap_position(region.end)
    for index in region.absorbed:
        start, end = min(start, layout.marks[index].start), max(end, layout.marks[index].end)
    return start, end


def _meet(layout: _Layout, last: _Region, region: _Region) -> bool:
    """Whether two regions' markup would stand side by side, with no mark between them: written as one,
    so one change reads as one mark (``{--quick brown--}``, never ``{--quick--}{-- brown--}``)."""
    return region.start == last.end and _raw_range(layout, region)[0] <= _raw_range(layout, last)[1]


def _regions(layout: _Layout, hunks: list[Hunk]) -> list[_Region]:
    """The hunks widened over the marks they overlap; regions that then overlap or meet are merged and
    widened again. Widening never reaches back over an earlier region (it would have absorbed the same
    mark)."""
    merged: list[_Region] = []
    for hunk in hunks:
        region = _Region(hunk.start, hunk.end, [hunk])
        _widen(layout, region)
        while merged and (region.start < merged[-1].end or _meet(layout, merged[-1], region)):
            last = merged.pop()
            region = _Region(
                min(last.start, region.start),
                max(last.end, region.end),
                last.hunks + region.hunks,
                last.absorbed | region.absorbed,
            )
            _widen(layout, region)
        merged.append(region)
    return merged


def _new_text(view: str, region: _Region) -> str:
    pieces: list[str] = []
    position = region.start
    for hunk in region.hunks:
        pieces += [view[position : hunk.start], hunk.new]
        position = hunk.end
    pieces.append(view[position : region.end])
    return "".join(pieces)


# -- writing one region --------------------------------------------------------------------------------------

_Piece = tuple[int, int] | str  # a kept raw range, or new text


@dataclass
class _RegionWriter:
    layout: _Layout
    meta: str
    superseded: set[str]
    pieces: list[_Piece] = field(default_factory=list)

    def keep(self, start: int, end: int) -> None:
        if end > start:
            self.pieces.append((start, end))

    def new(self, text: str) -> None:
        if text:
            self.pieces.append(text)

    def comment(self, mark: Mark) -> None:
        if mark_id(mark) in self.superseded:
            # The superseded suggestion's reply now belongs to the new suggestion: only its metadata changes.
            self.keep(mark.start, mark.start + _OPENING_WIDTH)
            self.new(self.meta)
            self.keep(mark.content_start, mark.end)
        else:
            self.keep(mark.start, mark.end)

    def write(self, raw_start: int, raw_end: int, indices: list[int], new_text: str) -> None:
        raw, marks = self.layout.raw, self.layout.marks
        # The base text of the range as runs of raw text: (base start, raw start, length), in order.
        segments: list[tuple[int, int, int]] = []
        comments: list[tuple[int, Mark]] = []
        length = 0

        def segment(start: int, end: int) -> None:
            nonlocal length
            if end > start:
                segments.append((length, start, end - start))
                length += end - start

        position = raw_start
        for index in indices:
            mark = marks[index]
            segment(position, mark.start)
            if mark.kind == "comment":
                comments.append((length, mark))
            elif mark.kind != "addition":
                segment(mark.content_start, mark.content_end)
            position = mark.end
        segment(position, raw_end)
        base = "".join(raw[r : r + n] for _, r, n in segments)
        segment_starts = [b for b, _, _ in segments]

        def keep_base(start: int, end: int) -> None:
            """Keep the raw text under base ``[start, end)``, run by run."""
            k = max(0, bisect_right(segment_starts, start) - 1)
            while start < end and k < len(segments):
                b, r, n = segments[k]
                stop = min(end, b + n)
                if stop > start:
                    self.keep(r + start - b, r + stop - b)
                    start = stop
                k += 1

        next_comment = 0

        def base_run(start: int, end: int, *, inside_deletion: bool) -> None:
            nonlocal next_comment
            b = start
            while b < end:
                at_comment = next_comment < len(comments) and comments[next_comment][0] == b
                if at_comment and not (inside_deletion and b == start):
                    if inside_deletion:
                        self.new(CLOSE_DELETION)
                    while next_comment < len(comments) and comments[next_comment][0] == b:
                        self.comment(comments[next_comment][1])
                        next_comment += 1
                    if inside_deletion:
                        self.new(OPEN_DELETION + self.meta)
                stop = end
                if next_comment < len(comments) and b < comments[next_comment][0] < end:
                    stop = comments[next_comment][0]
                keep_base(b, stop)
                b = stop

        def comments_at(b: int) -> None:
            nonlocal next_comment
            while next_comment < len(comments) and comments[next_comment][0] == b:
                self.comment(comments[next_comment][1])
                next_comment += 1

        cursor = 0
        for hunk in word_hunks(base, new_text):
            base_run(cursor, hunk.start, inside_deletion=False)
            comments_at(hunk.start)
            if hunk.old:
                self.new(OPEN_DELETION + self.meta)
                base_run(hunk.start, hunk.end, inside_deletion=True)
                self.new(CLOSE_DELETION)
            if hunk.new:
                self.new(OPEN_ADDITION + self.meta + hunk.new + CLOSE_ADDITION)
            cursor = hunk.end
        base_run(cursor, len(base), inside_deletion=False)
        comments_at(len(base))


def _edits_from_pieces(pieces: list[_Piece], raw_start: int, raw_end: int) -> list[RawEdit]:
    """Everything between kept ranges is deleted; new text goes where it stands between them."""
    edits: list[RawEdit] = []
    cursor, pending = raw_start, ""
    for piece in pieces:
        if isinstance(piece, str):
            pending += piece
            continue
        start, end = piece
        if start > cursor or pending:
            edits.append(RawEdit(cursor, start, pending))
        cursor, pending = end, ""
    if raw_end > cursor or pending:
        edits.append(RawEdit(cursor, raw_end, pending))
    return edits


_JUNCTIONS = (CLOSE_DELETION + OPEN_DELETION, CLOSE_ADDITION + OPEN_ADDITION, CLOSE_ADDITION + OPEN_DELETION)


def _marks_joined(raw: str, edits: list[RawEdit], uid: str, meta: str) -> tuple[list[RawEdit], str]:
    """The edits, changed so that one change of ``uid`` reads as one mark: marks of it standing side by
    side in the result become one deletion followed by one insertion (``{--quick--}{-- brown--}`` becomes
    ``{--quick brown--}``, ``{++a++}{--b--}`` becomes ``{--b--}{++a++}``). The deleted text stays where
    it is; only markers, metadata and (where an insertion stood before a deletion) inserted text move.
    Marks meet where a region meets a superseded mark that only takes the new metadata. Returns the edits
    and the text they write."""
    written = apply_raw_edits(raw, edits)
    # Any meeting but a deletion and its insertion puts the new metadata right after one of these: most
    # plans have none, and the note is not parsed again for them.
    if not any(f"{junction}{meta}" in written for junction in _JUNCTIONS):
        return edits, written
    own = [m for m in parse(written) if mark_id(m) == uid and m.kind in ("deletion", "addition")]
    changes: list[tuple[int, int, str]] = []  # replace written[start:end] with the text
    for chain in _side_by_side(own):
        kinds = [m.kind for m in chain]
        if kinds == ["deletion", "addition"]:
            continue
        if len(set(kinds)) == 1:
            changes += [(a.content_end, b.content_start, "") for a, b in itertools.pairwise(chain)]
            continue
        meta = written[chain[0].start + _OPENING_WIDTH : chain[0].content_start]
        added = "".join(m.content for m in chain if m.kind == "addition")
        position, opening = chain[0].start, OPEN_DELETION + meta
        for deletion in (m for m in chain if m.kind == "deletion"):
            changes.append((position, deletion.content_start, opening))
            position, opening = deletion.content_end, ""
        changes.append(
            (position, chain[-1].end, CLOSE_DELETION + OPEN_ADDITION + meta + added + CLOSE_ADDITION)
        )
    if not changes:
        return edits, written
    joined = _edits_from_pieces(_replaced(_pieces_of(raw, edits), changes), 0, len(raw))
    return joined, apply_raw_edits(raw, joined)


def _side_by_side(marks: list[Mark]) -> list[list[Mark]]:
    chains: list[list[Mark]] = []
    for mark in marks:
        if chains and chains[-1][-1].end == mark.start:
            chains[-1].append(mark)
        else:
            chains.append([mark])
    return [chain for chain in chains if len(chain) > 1]


def _pieces_of(raw: str, edits: Sequence[RawEdit]) -> list[tuple[int, int, _Piece]]:
    """The text the edits make, as pieces (kept raw ranges, inserted text) with where each stands in it."""
    pieces: list[tuple[int, int, _Piece]] = []
    cursor = at = 0
    for edit in [*edits, RawEdit(len(raw), len(raw), "")]:
        for piece in ((cursor, edit.start), edit.insert):
            size = piece[1] - piece[0] if isinstance(piece, tuple) else len(piece)
            if size:
                pieces.append((at, at + size, piece))
                at += size
        cursor = edit.end
    return pieces


def _replaced(pieces: list[tuple[int, int, _Piece]], changes: list[tuple[int, int, str]]) -> list[_Piece]:
    """The pieces with each ``(start, end, text)`` of ``changes`` (ascending, apart, none empty) done."""
    out: list[_Piece] = []
    changes = sorted(changes)
    k, entered = 0, -1
    for start, end, piece in pieces:
        position = start
        while position < end:
            while k < len(changes) and changes[k][1] <= position:
                k += 1
            if k < len(changes) and changes[k][0] <= position:
                if entered < k:
                    out.append(changes[k][2])
                    entered = k
                position = min(end, changes[k][1])
                continue
            stop = min(end, changes[k][0]) if k < len(changes) else end
            first, last = position - start, stop - start
            out.append((piece[0] + first, piece[0] + last) if isinstance(piece, tuple) else piece[first:last])
            position = stop
    return [piece for piece in out if piece != ""]


# -- checks ------------------------------------------------------------------------------------------------


def _unchanged_from_hunks(hunks: Sequence[Hunk], length_after: int) -> list[tuple[int, int]]:
    """The runs of the text after ``hunks`` that are copied unchanged from the text before."""
    unchanged: list[tuple[int, int]] = []
    position_before = position_after = 0
    for hunk in hunks:
        gap = hunk.start - position_before
        unchanged.append((position_after, position_after + gap))
        position_after += gap + len(hunk.new)
        position_before = hunk.end
    unchanged.append((position_after, length_after))
    return unchanged


_REACH = max(map(len, DELIMITERS)) - 1  # how far a delimiter touching a point can reach past it


def _outcomes(mark: Mark, uid: str) -> tuple[str, ...]:
    """What ``mark`` may leave in the text once decided: suggestion ``uid`` accepted, every other mark
    either way (a comment goes and a highlight stays whatever is decided)."""
    if mark.kind == "comment":
        return ("",)
    if mark.kind == "highlight":
        return (mark.content,)
    new = {"addition": mark.content, "deletion": "", "substitution": mark.new_content or ""}[mark.kind]
    if mark_id(mark) == uid:
        return (new,)
    old = "" if mark.kind == "addition" else mark.content
    return (new, old)


def _contexts(pieces: Iterable[tuple[str, ...]], *, leftward: bool) -> set[str]:
    """Every text of up to ``_REACH`` characters that ``pieces`` (each its possible outcomes) can put
    next to a point: after it, or before it when ``leftward`` (the pieces then run away from the point)."""
    found: set[str] = set()
    growing = {""}
    for outcomes in pieces:
        if not growing:
            break
        grown = {(o + s)[-_REACH:] if leftward else (s + o)[:_REACH] for s in growing for o in outcomes}
        found.update(s for s in grown if len(s) >= _REACH)
        growing = {s for s in grown if len(s) < _REACH}
    return found | growing


def _forged_by_any_decisions(raw: str, uid: str) -> str | None:
    """A delimiter that accepting suggestion ``uid`` can assemble, whatever is decided on the other marks.

    Each other mark is decided on its own, so around each of ``uid``'s marks every mix of its neighbours'
    outcomes counts: a delimiter that overlaps what the mark leaves, or spans the point where a deletion
    leaves nothing, is forged. Only the few characters a delimiter can reach past the mark matter, so
    the mixes are counted as the short texts they leave there, not one by one.
    """
    marks = parse(raw)
    pieces: list[tuple[str, ...]] = []
    ours: list[int] = []
    position = 0
    for mark in marks:
        pieces.append((raw[position : mark.start],))
        if mark_id(mark) == uid and mark.kind in ("addition", "deletion", "substitution"):
            ours.append(len(pieces))
        pieces.append(_outcomes(mark, uid))
        position = mark.end
    pieces.append((raw[position:],))
    for index in ours:
        (left_out,) = pieces[index]
        # Walked from the mark outwards, never copied: a note may hold thousands of marks.
        lefts = _contexts(map(pieces.__getitem__, range(index - 1, -1, -1)), leftward=True)
        rights = _contexts(map(pieces.__getitem__, range(index + 1, len(pieces))), leftward=False)
        if len(left_out) > 2 * _REACH:
            # No delimiter reaches across it: its inside once, then each edge with what may stand there.
            inside = _DELIMITER_LOOKAHEAD.search(left_out)
            if inside is not None:
                return inside.group(1)
            found = _touching(lefts, left_out[:_REACH], {""}) or _touching({""}, left_out[-_REACH:], rights)
        else:
            found = _touching(lefts, left_out, rights)
        if found is not None:
            return found
    return None


def _touching(lefts: set[str], middle: str, rights: set[str]) -> str | None:
    """A delimiter of some ``left + middle + right`` that overlaps ``middle`` (or, when it is empty,
    spans the point between)."""
    for left in lefts:
        start, end = len(left), len(left) + len(middle)
        for right in rights:
            for match in _DELIMITER_LOOKAHEAD.finditer(left + middle + right):
                first, last = match.start(), match.start() + len(match.group(1))
                if (first < end and last > start) if end > start else first < start < last:
                    return match.group(1)
    return None


def _forged_in(text: str, unchanged: list[tuple[int, int]]) -> str | None:
    """A delimiter in ``text`` that does not lie wholly inside one of the ``unchanged`` runs, if any.

    Checking each new string alone misses delimiters assembled from several pieces (``{+`` then ``+``),
    or from new text and its neighbours; this looks at the result.
    """
    starts = [start for start, _ in unchanged]
    for match in _DELIMITER_LOOKAHEAD.finditer(text):
        delimiter, start = match.group(1), match.start()
        k = bisect_right(starts, start) - 1
        if k < 0 or start + len(delimiter) > unchanged[k][1]:
            return delimiter
    return None


def forged_delimiter(before: str, after: str) -> str | None:
    """A delimiter in ``after`` not copied whole from ``before``, if any."""
    return _forged_in(after, _unchanged_from_hunks(word_hunks(before, after), len(after)))


def _check(raw: str, plan_raw: str, new_view: str, uid: str, kept: list[str]) -> None:
    others = [plan_raw[m.start : m.end] for m in parse(plan_raw) if mark_id(m) != uid]
    if others != kept:
        # Name the delimiter that opens the first mark not as it was: what the check caught.
        changed = next((o for o, k in itertools.zip_longest(others, kept) if o != k), None) or kept[-1]
        raise SuggestionError(
            UNSAFE.format(what=f"the markup opened by '{changed[:_OPENING_WIDTH]}' would not stay as it was")
        )
    if accepted_of(plan_raw) != new_view:
        raise SuggestionError(UNSAFE.format(what="the accepted text would not come out as requested"))
    if base_of(plan_raw) != base_of(raw):
        raise SuggestionError(UNSAFE.format(what="the text under the suggestions would change"))


# -- the plan ----------------------------------------------------------------------------------------------


def plan_suggestion(raw: str, new_view: str, *, meta: str, uid: str) -> Plan:
    """The edits of ``raw`` that propose ``new_view`` (a change of its accepted view) as suggestion ``uid``.

    ``meta`` is the rendered metadata (``{…}@@``) carrying ``uid``. Raises SuggestionError, having
    changed nothing, when the change would forge markup or could not keep the invariants.
    """
    layout = _Layout.of(raw)
    view = accepted_of(raw)
    hunks = word_hunks(view, new_view)
    delimiter = _forged_in(new_view, _unchanged_from_hunks(hunks, len(new_view)))
    if delimiter is not None:
        raise SuggestionError(FORGED.format(delimiter=delimiter))
    regions = _regions(layout, hunks)
    absorbed = set().union(*(r.absorbed for r in regions)) if regions else set()
    superseded = sorted({i for i in (mark_id(layout.marks[k]) for k in absorbed) if i is not None})
    writer = _RegionWriter(layout, meta, set(superseded))
    edits: list[RawEdit] = []
    in_regions: set[int] = set()
    for region in regions:
        raw_start, raw_end = _raw_range(layout, region)
        indices = list(layout.within(raw_start, raw_end))
        absorbed.update(i for i in indices if layout.marks[i].kind != "comment")
        in_regions.update(indices)
        writer.pieces = []
        writer.write(raw_start, raw_end, indices, _new_text(view, region))
        edits += _edits_from_pieces(writer.pieces, raw_start, raw_end)
    for index, mark in enumerate(layout.marks):
        if index not in in_regions and mark_id(mark) in writer.superseded:
            edits.append(RawEdit(mark.start + _OPENING_WIDTH, mark.content_start, meta))
    edits.sort(key=lambda e: (e.start, e.end))
    edits, plan_raw = _marks_joined(raw, edits, uid, meta)
    kept = [
        raw[m.start : m.end]
        for i, m in enumerate(layout.marks)
        if i not in absorbed and mark_id(m) not in writer.superseded
    ]
    _check(raw, plan_raw, new_view, uid, kept)
    # Decided one by one, the marks beside this one may go either way: no markup may form in any mix.
    delimiter = _forged_by_any_decisions(plan_raw, uid)
    if delimiter is not None:
        raise SuggestionError(FORGED.format(delimiter=delimiter))
    if not any(mark_id(m) == uid for m in parse(plan_raw)):
        raise SuggestionError(ONLY_UNDOES.format(uids=", ".join(superseded) or "none"))
    return Plan(plan_raw, edits, superseded)


def plan_comment(raw: str, *, uid: str, comment: str, meta: str) -> RawEdit | None:
    """A ``{>>…<<}`` right after the suggestion's last mark, so editors read it as its reply."""
    own = [m for m in parse(raw) if mark_id(m) == uid]
    if not own:
        return None
    end = own[-1].end
    return RawEdit(end, end, render_comment(comment, meta))
