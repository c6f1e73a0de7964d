"""Cleaning up a stale suggestion: settle what is left of it, keeping every word a person typed.

The rule (the one docs/review.md describes), per part of the suggestion as it now stands in the note:

1. A person typed inside its inserted text (and not inside the text it deletes): the person was working
   on the new text, so the part is taken as they left it: the inserted text stays with their words, the
   text it replaced goes.
2. A person typed inside the text it deletes (and not inside its insertion): the old text stays with
   their words, the proposed insertion goes.
3. A person typed inside both: both stay, nothing a person wrote is lost.
4. A part nobody touched is rejected: the old text comes back and the proposed insertion goes.
5. Markers left without a partner (a person deleted a delimiter, ``{"author":…}@@and algal ++}``): the
   markers and metadata go; the text between them stays, unless it is exactly a proposed insertion.

Every marker and its metadata go; other suggestions and comments stay byte-identical. It is a recorded
decision: who cleaned up, when, and an entry in the admin's history.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore.offsets import text_delete
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.docstore.texts import CONTENTS
from suggestions.kinds import rules_of
from suggestions.lifecycle.deciding import Decision
from suggestions.lifecycle.follow import holding
from suggestions.markup.criticmarkup import (
    CLOSE_ADDITION,
    CLOSE_DELETION,
    OPEN_ADDITION,
    OPEN_DELETION,
    Mark,
    Span,
    mark_id,
    merged_descending,
    own_changes,
    parse,
)
from suggestions.models import Suggestion
from suggestions.signals import suggestion_decided

CLEANABLE = (Suggestion.Status.PENDING, Suggestion.Status.STALE)
CLEANED_NOTE = (
    "Cleaned up: a person edited it, so it could not be decided as proposed. What they typed is kept; "
    "the rest of it was rejected."
)
_OPENING_WIDTH = 3


def _metadata_spans(raw: str, uid: str) -> list[tuple[int, int]]:
    """Where ``{…"id":"uid"…}@@`` stands in ``raw`` (metadata never spans a line: JSON escapes breaks)."""
    found = []
    needle = f'"id":{json.dumps(uid)}'
    for match in re.finditer(re.escape(needle), raw):
        start = raw.rfind("{", 0, match.start())
        while start >= 0:
            try:
                value, consumed = json.JSONDecoder().raw_decode(raw, start)
            except ValueError:
                start = raw.rfind("{", 0, start)
                continue
            end = consumed
            if isinstance(value, dict) and value.get("id") == uid and raw.startswith("@@", end):
                found.append((start, end + 2))
            break
    return found


def _inside(position: int, marks: Iterable[Mark]) -> bool:
    return any(m.start <= position < m.end for m in marks)


def _taken_as_typed(raw: str, uid: str, proposed_new: set[str], proposed_old: set[str]) -> set[int]:
    """Where the deletions of the parts a person typed inside the insertion of (only) start: rule 1."""
    starts = set()
    for change in own_changes(raw, uid):
        deletion = next((m for m in change.marks if m.kind == "deletion"), None)
        addition = next((m for m in change.marks if m.kind == "addition"), None)
        if deletion is None or addition is None:
            continue
        if addition.content not in proposed_new and deletion.content in proposed_old:
            starts.add(deletion.start)
    return starts


def clean_up_spans(
    raw: str, uid: str, proposed_new: set[str], proposed_old: set[str] | None = None
) -> list[Span]:
    """The spans to delete under the module's rule: this suggestion's markers and metadata, additions
    still as proposed, and the old text of parts a person rewrote inside the insertion."""
    marks = parse(raw)
    others = [m for m in marks if mark_id(m) != uid]
    replaced = _taken_as_typed(raw, uid, proposed_new, proposed_old or set())
    spans: list[Span] = []
    for mark in marks:
        if mark_id(mark) != uid:
            continue
        goes_whole = mark.kind == "comment" or (mark.kind == "addition" and mark.content in proposed_new)
        if goes_whole or mark.start in replaced:
            spans.append(Span(mark.start, mark.end))
        else:
            spans += [Span(mark.start, mark.content_start), Span(mark.content_end, mark.end)]
    for start, end in _metadata_spans(raw, uid):
        if _inside(start, marks):
            continue  # part of an intact mark, handled above
        opener = raw[start - _OPENING_WIDTH : start]
        begin = start - _OPENING_WIDTH if opener in (OPEN_ADDITION, OPEN_DELETION) else start
        closers = [(raw.find(c, end), c) for c in (CLOSE_ADDITION, CLOSE_DELETION)]
        found = [(at, c) for at, c in closers if at >= 0 and not _inside(at, others)]
        if not found:
            spans.append(Span(begin, end))
            continue
        at, closer = min(found)
        if closer == CLOSE_ADDITION and raw[end:at] in proposed_new:
            spans.append(Span(begin, at + len(closer)))
        else:
            spans += [Span(begin, end), Span(at, at + len(closer))]
    return merged_descending(spans)


def _delete_spans(room: Room, spans: list[Span]) -> None:
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        current = str(ytext)
        for span in spans:  # right to left: earlier indices hold
            text_delete(ytext, current=current, start=span.start, end=span.end)
            current = current[: span.start] + current[span.end :]


def _record_clean_up(suggestion: Suggestion, *, user: Any) -> bool:
    with transaction.atomic():
        done = Suggestion.objects.filter(pk=suggestion.pk, status__in=CLEANABLE).update(
            status=Suggestion.Status.REJECTED,
            decided_at=timezone.now(),
            decided_by=user if getattr(user, "pk", None) else None,
            note=CLEANED_NOTE,
        )
        if done:
            suggestion_decided.send(sender=Suggestion, pks=[suggestion.pk])
        if done and getattr(user, "pk", None):
            LogEntry.objects.log_actions(
                user_id=user.pk,
                queryset=[suggestion],
                action_flag=CHANGE,
                change_message="Cleaned up the stale suggestion's leftovers",
                single_object=True,
            )
    suggestion.refresh_from_db()
    return bool(done)


async def suggestion_clean_up_in_store(*, store: DocStore, suggestion: Suggestion, user: Any) -> Decision:
    if suggestion.status not in CLEANABLE or not rules_of(suggestion).marked:
        return Decision(suggestion, False, f"suggestion is {suggestion.status}: nothing to clean up")
    room = await store.get(suggestion.doc_id)
    removed = 0
    # Held until the row says who cleaned it up: the follower must not record the markup's removal first.
    async with holding(store, suggestion.doc_id):
        if room is not None:
            raw = str(room.doc.get(CONTENTS, type=Text))
            proposed = {h.get("new", "") for h in suggestion.hunks or [] if h.get("new")}
            replaced = {h.get("old", "") for h in suggestion.hunks or [] if h.get("old")}
            spans = clean_up_spans(raw, suggestion.uid, proposed, replaced)
            _delete_spans(room, spans)
            removed = sum(s.end - s.start for s in spans)
            await room.flushed()
        recorded = await store.db(_record_clean_up, suggestion, user=user)
    if not recorded:
        return Decision(suggestion, False, "someone decided it meanwhile")
    return Decision(suggestion, True, detail=f"{removed} characters of leftovers removed")


def suggestion_clean_up(*, suggestion: Suggestion, user: Any) -> Decision:
    """Remove a stale suggestion's leftovers from its document and record who did it (sync, for the admin)."""
    return run_on_store(
        lambda store: suggestion_clean_up_in_store(store=store, suggestion=suggestion, user=user)
    )
