"""What a person in suggesting mode may change in a note: their own marks, nothing else.

A person's mark carries their user id and username in its metadata
(``{"author":"ana","timestamp":…,"id":"…","user":7}@@``). Going from one text to the next is allowed when

- the note without any suggestion (every mark rejected) reads the same: plain text was neither typed into
  nor deleted, only wrapped in a deletion or left alone;
- every mark that is not the person's is still there, character for character and in the same order;
- every mark of the person's names them and has an id, and is an insertion, a deletion or a comment.

So typing becomes ``{++…++}``, deleting becomes ``{--…--}``, and inside their own insertion a person types
and deletes freely. The editor checks the same rule before it sends (editor/src/suggesting.js), so its
user never meets a refusal; a hand-made client that breaks it is refused and told why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from suggestions.markup.criticmarkup import Change, Mark, mark_id, parse, resolve

OWN_KINDS = frozenset({"addition", "deletion", "comment"})
# As the editor makes them: 16 hex digits, like a row's uid (suggestions.models.new_uid).
ID_RE = re.compile(r"[0-9a-f]{16}")


def mark_user(mark: Mark) -> int | None:
    """The user id a person's mark carries (None: not a person's mark)."""
    value = (mark.metadata or {}).get("user")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def own_ids(marks: Sequence[Mark], user_id: int) -> set[str]:
    return {uid for m in marks if mark_user(m) == user_id and (uid := mark_id(m)) is not None}


def _original(text: str, marks: Sequence[Mark]) -> str:
    return resolve(text, lambda mark: False, marks=marks)


def suggesting_refusal(before: str, after: str, *, user_id: int, username: str) -> str | None:
    """Why going from ``before`` to ``after`` is more than the person's own suggesting, or None."""
    marks_before, marks_after = parse(before), parse(after)
    theirs_before = [before[m.start : m.end] for m in marks_before if mark_user(m) != user_id]
    theirs_after = [after[m.start : m.end] for m in marks_after if mark_user(m) != user_id]
    if theirs_before != theirs_after:
        return "someone else's suggestion or comment cannot be changed here: decide it or suggest beside it"
    others_ids = {mark_id(m) for m in marks_after if mark_user(m) != user_id}
    for mark in marks_after:
        if mark_user(mark) != user_id:
            continue
        if mark.kind not in OWN_KINDS:
            return "a suggestion is typed as an insertion or a deletion"
        if (mark.metadata or {}).get("author") != username:
            return "a suggestion must name you as its author"
        uid = mark_id(mark)
        if uid is None or not ID_RE.fullmatch(uid):
            return "a suggestion needs an id of 16 hex digits"
        if uid in others_ids:
            return "a suggestion's id must be its own"
    if _original(before, marks_before) != _original(after, marks_after):
        return "the text itself cannot be changed: typing and deleting must become suggestions"
    return None


class PersonsRow(Protocol):
    @property
    def person_id(self) -> int | None: ...


def typed_on_by_author(suggestion: PersonsRow, changes: Sequence[Change]) -> bool:
    """Whether a person's suggestion whose marks differ from its row differs only because they typed on in
    it (every mark still theirs): its row catches up (suggestions.lifecycle.suggesting), it is not stale."""
    person = suggestion.person_id
    return (
        person is not None
        and bool(changes)
        and all(mark_user(m) == person for change in changes for m in change.all_marks)
    )
