"""Moving an edit planned off the event loop onto the note as it is when the plan comes back.

A note over `PLAN_ON_LOOP_CHARS` is planned in the planning process, on the text as read; while the plan is
made, a person keeps typing. Remade each time, a plan in a note someone types into came back stale every
time (in the assistants' storm 3 edits in 10 s got through). What changed meanwhile is one stretch of the
text (the common prefix and suffix of the two texts bound it); when every character the plan touches lies
apart from that stretch, the plan is the same plan on the new text, its offsets after the stretch moved by
what the stretch grew or shrank.
"""

from __future__ import annotations

import dataclasses

from suggestions.lifecycle.planning import PlannedEdit
from suggestions.markup.diff import common_prefix_length, common_suffix_length
from suggestions.markup.rewriting import Plan, RawEdit, apply_raw_edits

# Characters left untouched between the plan's edits and the stretch that changed: a keystroke right beside
# a word the plan marks could have joined it to the word.
MARGIN = 2


def changed_stretch(old: str, new: str) -> tuple[int, int, int]:
    """`(start, old_end, new_end)`: `old[start:old_end]` became `new[start:new_end]`, the rest is equal."""
    start = common_prefix_length(old, new)
    suffix = common_suffix_length(old, new, min(len(old), len(new)) - start)
    return start, len(old) - suffix, len(new) - suffix


def _moved(edit: RawEdit, *, start: int, end: int, by: int) -> RawEdit | None:
    """`edit` moved past the stretch `[start, end)` that grew `by`; None when it comes near it."""
    if edit.end + MARGIN <= start:
        return edit
    if edit.start >= end + MARGIN:
        return RawEdit(edit.start + by, edit.end + by, edit.insert)
    return None


def rebased(planned: PlannedEdit, now: str) -> PlannedEdit | None:
    """The edit planned on `planned.raw`, on `now`; None when what changed comes near what it touches."""
    old = planned.raw
    if now == old:
        return planned
    start, old_end, new_end = changed_stretch(old, now)
    grew = new_end - old_end
    # The plan keeps the characters it marks (they sit between its insertions of markup): the whole span
    # from its first edit to its last must lie apart from the stretch, not each edit.
    if not planned.plan.edits:
        return None
    span = RawEdit(min(e.start for e in planned.plan.edits), max(e.end for e in planned.plan.edits), "")
    moved_span = _moved(span, start=start, end=old_end, by=grew)
    if moved_span is None:
        return None
    by = moved_span.start - span.start
    edits = [RawEdit(e.start + by, e.end + by, e.insert) for e in planned.plan.edits]
    # In the text the edits leave, the stretch starts where it did, moved by the edits before it.
    before = sum(len(e.insert) - (e.end - e.start) for e in planned.plan.edits if e.end <= start)
    at, until = start + before, old_end + before
    reply = None
    if planned.reply is not None:
        reply = _moved(planned.reply, start=at, end=until, by=grew)
        if reply is None:
            return None
        if reply.start < at:  # a reply before the stretch moves it too
            grown = len(reply.insert) - (reply.end - reply.start)
            at, until = at + grown, until + grown
    # The marks' byte offsets in the written text: past the stretch they move by its growth in bytes.
    plan_raw = apply_raw_edits(now, edits)
    written = apply_raw_edits(plan_raw, [reply]) if reply is not None else plan_raw
    byte_at = len(written[:at].encode())
    grew_bytes = len(now[start:new_end].encode()) - len(old[start:old_end].encode())
    changes = [
        (s, e, o, n) if e <= byte_at else (s + grew_bytes, e + grew_bytes, o, n)
        for s, e, o, n in planned.changes
    ]
    return dataclasses.replace(
        planned,
        raw=now,
        plan=Plan(raw=plan_raw, edits=edits, superseded=planned.plan.superseded),
        reply=reply,
        changes=changes,
        markup_start=planned.markup_start + (grew if planned.markup_start >= until else 0),
    )
