"""Rows for what people type in suggesting mode: one per mark id, like an assistant's, kept in step.

The socket checks each update (suggestions.markup.suggesting) and calls `PeopleSuggesting.suggested` after it
applied. A moment after the person stops typing, their marks in the note are read: a mark id without a row
gets one (review page, editor, webhooks, undo, audit export and history then treat it as any suggestion),
and a pending row whose marks the person went on typing in gets their text and positions again. Both happen
holding the note (suggestions.lifecycle.follow.holding), so the follower never reads a row behind its
marks; until then it leaves a person's row whose marks are all still theirs pending (it does not call
their own typing a change by someone else).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from pycrdt import Text

from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.rehearsal import UpdateDeclined
from lensrelay.docstore.room import Room
from lensrelay.docstore.texts import CONTENTS
from lensrelay.models import Document
from lensrelay.sync.suggesting import Person
from suggestions.lifecycle.follow import holding
from suggestions.lifecycle.hunks import change_texts, hunk_records
from suggestions.markup.criticmarkup import Change, mark_id, parse_changes
from suggestions.markup.records import HunkRecord
from suggestions.markup.suggesting import Readings, mark_user, suggesting_refusal
from suggestions.models import Suggestion
from suggestions.webhooks import suggestion_created_record

logger = logging.getLogger(__name__)

# A burst of typing: rows are brought in step this long after the person's last accepted update.
SETTLE_SECONDS = 0.3
TOOL = "suggesting"


class PeopleSuggesting:
    """The suggesting rule lensrelay's sockets call (registered in suggestions.apps)."""

    def __init__(self) -> None:
        self._due: dict[tuple[int, str, int], asyncio.TimerHandle] = {}
        self._read = Readings()

    def check(self, before: str, after: str, person: Person) -> None:
        reason = suggesting_refusal(
            before, after, user_id=person.user_id, username=person.username, read=self._read
        )
        if reason is not None:
            raise UpdateDeclined(reason)

    def suggested(self, room: Room[Any], person: Person) -> None:
        key = (id(room.store), room.doc_id, person.user_id)
        if (timer := self._due.pop(key, None)) is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self._due[key] = loop.call_later(SETTLE_SECONDS, self._settle, key, room, person)

    def _settle(self, key: tuple[int, str, int], room: Room[Any], person: Person) -> None:
        self._due.pop(key, None)
        room.store.spawn(person_rows_in_step(room=room, person=person))


def _changes_by_id(raw: str, user_id: int) -> dict[str, list[Change]]:
    """The person's changes in ``raw`` by mark id (a change with anyone else's mark in it is not theirs)."""
    by_id: dict[str, list[Change]] = {}
    for change in parse_changes(raw):
        marks = change.all_marks
        uid = mark_id(marks[0])
        if uid is not None and all(mark_user(m) == user_id and mark_id(m) == uid for m in marks):
            by_id.setdefault(uid, []).append(change)
    return by_id


def _rows(uids: Sequence[str]) -> dict[str, Suggestion]:
    return {row.uid: row for row in Suggestion.objects.filter(uid__in=list(uids))}


def _in_step(row: Suggestion, changes: Sequence[Change]) -> bool:
    return [(h.get("old", ""), h.get("new", "")) for h in row.hunks] == [(c.old, c.new) for c in changes]


async def person_rows_in_step(*, room: Room[Any], person: Person) -> None:
    """Make the rows of the person's marks in this note, and bring their pending rows up to date."""
    with failures_logged(logger, "keeping the suggestions of %s in %s in step", person.username, room.doc_id):
        store = room.store
        by_id = _changes_by_id(str(room.doc.get(CONTENTS, type=Text)), person.user_id)
        if not by_id:
            return
        rows = await store.db(_rows, list(by_id))
        if all(
            uid in rows and (not rows[uid].is_pending or _in_step(rows[uid], by_id[uid])) for uid in by_id
        ):
            return
        async with holding(store, room.doc_id):
            # Read again under the hold: this is what the rows will say.
            raw = str(room.doc.get(CONTENTS, type=Text))
            by_id = _changes_by_id(raw, person.user_id)
            records = {uid: hunk_records(room, uid) for uid in by_id}
            await store.db(
                _write_rows,
                doc_id=room.doc_id,
                person=person,
                texts={uid: change_texts(raw, found) for uid, found in by_id.items()},
                changes=by_id,
                records=records,
            )


def _write_rows(
    *,
    doc_id: str,
    person: Person,
    texts: dict[str, tuple[str, str, str]],
    changes: dict[str, list[Change]],
    records: dict[str, list[HunkRecord]],
) -> None:
    existing = _rows(list(changes))
    document = Document.objects.select_related("folder").filter(doc_id=doc_id).first()
    if document is None:  # deleted meanwhile: its suggestions went with it
        return
    with transaction.atomic():
        for uid, found in changes.items():
            old_text, new_text, markup = texts[uid]
            row = existing.get(uid)
            if row is None:
                row = Suggestion.objects.create(
                    uid=uid,
                    kind=Suggestion.Kind.EDIT,
                    folder_id=document.folder_id,
                    document=document,
                    doc_id=doc_id,
                    path=document.user_path,
                    person_id=person.user_id,
                    author=person.username,
                    client_name="editor",
                    tool=TOOL,
                    old_text=old_text,
                    new_text=new_text,
                    markup=markup,
                    hunks=records[uid],
                )
                suggestion_created_record(suggestion=row)
            elif row.person_id == person.user_id and row.doc_id == doc_id and not _in_step(row, found):
                # Only while pending: a decision taken meanwhile stands.
                Suggestion.objects.filter(pk=row.pk, status=Suggestion.Status.PENDING).update(
                    old_text=old_text, new_text=new_text, markup=markup, hunks=records[uid]
                )
