"""Undoing a decision: the suggestion's markup written back exactly where it was, the row pending again.

A decision can be undone for ``LENSRELAY_UNDO_SECONDS`` after it was made, by anyone who may review. The
text the decision left must still be exactly where it was (see ``suggestions.markup.undo_record``); otherwise
undo is refused, naming what moved, and nothing changes. A bulk decision is undone as a whole or not at
all. Undoing is claimed like a decision (``suggestions.lifecycle.claims``): of people undoing or deciding at
once, exactly one wins. History keeps the decision's entry and adds the undo's.

What can be undone: accepting or rejecting an edit, accepting a new note (its markup comes back), and
rejecting a move, a delete or a file replacement (nothing changed: the row is pending again). Accepting
a move, a delete or a file replacement, and rejecting a new note, changed the vault itself: they are
refused with what to do instead (move it back, restore it from the trash).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore.offsets import text_replace
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.docstore.texts import CONTENTS
from suggestions.errors import SuggestionError
from suggestions.kinds import rules_of
from suggestions.lifecycle.claims import DECIDED, UndoClaim, claim_undo, release_undo, settle_undo
from suggestions.lifecycle.follow import holding
from suggestions.lifecycle.hunks import hunk_records
from suggestions.markup.records import RegionRecord
from suggestions.markup.revising import RawReplacement, apply_replacements, revision_edits
from suggestions.markup.undo_record import insert_all, pieces_back
from suggestions.models import Suggestion

Status = Suggestion.Status


def undo_window() -> timedelta:
    return timedelta(seconds=float(getattr(settings, "LENSRELAY_UNDO_SECONDS", 600.0)))


@dataclass
class UndoResult:
    ok: bool
    message: str
    suggestions: list[Suggestion] = field(default_factory=list)


def _label(row: Suggestion) -> str:
    return f"{row.get_kind_display().lower()} of {row.path} ({row.uid})"


def undo_refusal(row: Suggestion, *, now: Any = None) -> str | None:
    """Why this row's decision cannot be undone (None: it can, if the text is still as it was left)."""
    if row.status not in DECIDED:
        if row.status == Status.UNDOING:
            return "its decision is being undone by someone else right now"
        if row.status in (Status.REVERTING, Status.REVERTED):
            return (
                "its accepted text was rolled back (suggestions/lifecycle/rollback.py): "
                "nothing is left to undo"
            )
        return f"it was never decided (it is {row.get_status_display().lower()})"
    unsupported = rules_of(row).undo_refused.get(str(row.status))
    if unsupported is not None:
        return unsupported
    if "regions" not in (row.undo or {}):
        return "it was decided in an editor (or before undo existed): undo it there"
    decided_at = row.decided_at
    window = undo_window()
    if decided_at is None or (now or timezone.now()) - decided_at > window:
        return f"decisions can be undone for {_duration(window)} only, and this one is older"
    return None


def undoable(row: Suggestion) -> bool:
    return undo_refusal(row) is None


def _duration(window: timedelta) -> str:
    seconds = int(window.total_seconds())
    if seconds % 60 == 0 and seconds >= 60:
        minutes = seconds // 60
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def _batch_rows(batch: str) -> list[Suggestion]:
    return list(Suggestion.objects.filter(decision_batch=batch, status__in=DECIDED).order_by("created"))


def _fresh(pks: list[int]) -> list[Suggestion]:
    rows = {r.pk: r for r in Suggestion.objects.select_related("decided_by").filter(pk__in=pks)}
    return [rows[pk] for pk in pks if pk in rows]


def _claim_all(rows: list[Suggestion], user: Any) -> list[UndoClaim] | str:
    """Claim every row, or none: the first one lost names who was faster."""
    claims: list[UndoClaim] = []
    for row in rows:
        claim = claim_undo(row=row, user=user)
        if claim is None:
            for won in claims:
                release_undo(claim=won)
            return f"{_label(row)}: it was undone or decided by someone else just now"
        claims.append(claim)
    return claims


def _release_all(claims: list[UndoClaim]) -> None:
    for claim in claims:
        release_undo(claim=claim)


def _write_back(rooms: dict[str, Room], rows: list[Suggestion]) -> list[str]:
    """Check every region of every row, then (only if all are in place) write every piece back.

    A note's decisions are undone latest first, each against the text the later ones' undo leaves, so
    suggestions decided one after another (a bulk decision) come back exactly even where they were close.
    A suggestion accepted with changes comes back as it was proposed: its revised inserted text is changed
    back in the same step. All is checked on a copy first; then written, with no await from the first check
    to the last write, so nothing can change a note in between. Returns the rows whose text moved (then
    nothing is written).
    """
    steps: dict[str, list[list[RawReplacement]]] = defaultdict(list)
    moved: list[str] = []
    by_doc: dict[str, list[Suggestion]] = defaultdict(list)
    for row in rows:
        if row.undo.get("regions"):
            by_doc[row.doc_id].append(row)
    for doc_id, decided in by_doc.items():
        room = rooms.get(doc_id)
        if room is None:
            moved += [f"{_label(row)}: the document no longer exists" for row in decided]
            continue
        text = str(room.doc.get(CONTENTS, type=Text))
        for row in sorted(decided, key=lambda r: r.decided_at or timezone.now(), reverse=True):
            pieces = pieces_back(text, row.undo["regions"])
            if pieces is None:
                moved.append(f"{_label(row)}: {_moved_text(row.undo['regions'])}")
                continue
            steps[doc_id].append([RawReplacement(index, index, value) for index, value in pieces])
            text = insert_all(text, pieces)
            if row.accepted_with_changes:
                try:
                    unrevising = revision_edits(text, row.uid, row.proposed_insertions())
                except SuggestionError as exc:
                    moved.append(f"{_label(row)}: its proposal cannot be restored ({exc})")
                    continue
                steps[doc_id].append(unrevising)
                text = apply_replacements(text, unrevising)
    if moved:
        return moved
    for doc_id, doc_steps in steps.items():
        room = rooms[doc_id]
        ytext = room.doc.get(CONTENTS, type=Text)
        with room.transact():
            current = str(ytext)
            for edits in doc_steps:
                # Right to left: the text before each edit is still ``current``, so its offsets hold.
                for edit in sorted(edits, key=lambda e: e.start, reverse=True):
                    text_replace(ytext, current=current, start=edit.start, end=edit.end, value=edit.insert)
                current = apply_replacements(current, edits)
    return []


def _moved_text(records: list[RegionRecord]) -> str:
    settled = " … ".join(str(record.get("settled", "")) for record in records)
    if not settled:
        return "the text changed where the decision left it (something was typed or deleted there)"
    flat = settled.replace("\n", "⏎")
    shown = flat if len(flat) <= 60 else flat[:59] + "…"
    return f"the text the decision left (“{shown}”) was edited since"


async def suggestions_undo_decided(
    *, store: DocStore, suggestions: Sequence[Suggestion], user: Any
) -> UndoResult:
    """Undo the decisions on ``suggestions`` together: all of them, or none with the reasons."""
    rows = await store.db(_fresh, [s.pk for s in suggestions])
    if not rows:
        return UndoResult(False, "nothing to undo")
    refusals = [f"{_label(r)}: {reason}" for r in rows if (reason := undo_refusal(r)) is not None]
    if refusals:
        return UndoResult(False, "Cannot undo " + "; ".join(refusals), rows)
    claims = await store.db(_claim_all, rows, user)
    if isinstance(claims, str):
        return UndoResult(False, f"Cannot undo {claims}", rows)
    # Held from the markup's return until the rows are pending again.
    async with holding(store, *{r.doc_id for r in rows if r.undo.get("regions")}):
        refused = await _write_back_and_settle(store, rows, claims, user=user)
    if refused is not None:
        return refused
    reopened = await store.db(_fresh, [r.pk for r in rows])
    names = ", ".join(_label(r) for r in reopened)
    return UndoResult(
        True, f"Undone: {names} {'is' if len(reopened) == 1 else 'are'} pending again.", reopened
    )


async def _write_back_and_settle(
    store: DocStore, rows: list[Suggestion], claims: list[UndoClaim], *, user: Any
) -> UndoResult | None:
    """Write the markup back, then make the rows pending again; an UndoResult when refused."""
    try:
        rooms: dict[str, Room] = {}
        for doc_id in {r.doc_id for r in rows if r.undo.get("regions")}:
            room = await store.get(doc_id)
            if room is not None:
                rooms[doc_id] = room
        moved = _write_back(rooms, rows)
        if moved:
            await store.db(_release_all, claims)
            return UndoResult(
                False, "Cannot undo: the text changed since the decision: " + "; ".join(moved), rows
            )
        for room in rooms.values():
            await room.flushed()
    except BaseException:
        await store.db(_release_all, claims)
        raise
    for row, claim in zip(rows, claims, strict=True):
        room = rooms.get(row.doc_id)
        hunks = hunk_records(room, row.uid) if room is not None and row.undo.get("regions") else row.hunks
        await store.db(settle_undo, claim=claim, user=user, hunks=hunks)
    return None


# -- entry points ------------------------------------------------------------------------------------------


def suggestion_undo(*, suggestion: Suggestion, user: Any) -> UndoResult:
    """Undo the decision on one suggestion (one of a bulk decision's, alone)."""
    return run_on_store(
        lambda store: suggestions_undo_decided(store=store, suggestions=[suggestion], user=user)
    )


def suggestion_bulk_undo(*, suggestions: Sequence[Suggestion], user: Any) -> UndoResult:
    """Undo the decisions on several suggestions together, all or none."""
    return run_on_store(
        lambda store: suggestions_undo_decided(store=store, suggestions=suggestions, user=user)
    )


def suggestion_batch_undo(*, suggestion: Suggestion, user: Any) -> UndoResult:
    """Undo the whole bulk decision ``suggestion`` was decided in (just it, if it was decided alone)."""
    batch = suggestion.decision_batch
    rows = _batch_rows(batch) if batch else [suggestion]
    return suggestion_bulk_undo(suggestions=rows or [suggestion], user=user)


def recent_decisions(*, doc_id: str) -> list[Suggestion]:
    """The document's decisions that can still be undone, latest first."""
    since = timezone.now() - undo_window()
    rows = Suggestion.objects.filter(doc_id=doc_id, status__in=DECIDED, decided_at__gte=since)
    return [r for r in rows.select_related("decided_by").order_by("-decided_at") if undoable(r)]
