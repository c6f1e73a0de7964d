"""What restoring a version does to pending suggestions in the document.

A version from before a suggestion was made lacks its markup, so restoring it removes the markup: the
proposed change is no longer offered, and the row must say so rather than wait for a decision that can
no longer be made. The row becomes rejected, decided by whoever restored, with a note naming the version;
markup left only in part (the version held a different state of it) makes the row stale, for clean-up.
Markup the version still holds as proposed leaves its row pending. Either way the session that proposed
it hears of it (`suggestion_decided`), as of any decision.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore.texts import CONTENTS
from lensrelay.history.restoring import Restoring, on_restore
from suggestions.lifecycle.follow import holding
from suggestions.markup.criticmarkup import mark_id, parse
from suggestions.markup.integrity import markup_mismatch
from suggestions.models import Suggestion
from suggestions.selectors import pending_rows
from suggestions.signals import suggestion_decided


def restored_outcome(raw: str, suggestion: Suggestion) -> str | None:
    """None while the suggestion's markup is in `raw` as proposed; else the status the restore gives it."""
    present = any(mark_id(m) == suggestion.uid for m in parse(raw))
    if present:
        return None if markup_mismatch(raw, suggestion) is None else Suggestion.Status.STALE
    if f'"id":{json.dumps(suggestion.uid)}' in raw:
        return Suggestion.Status.STALE  # metadata left without its mark: leftovers to clean up
    return Suggestion.Status.REJECTED


def _settle(outcomes: list[tuple[Suggestion, str]], *, restoring: Restoring) -> int:
    version, user = restoring.version, restoring.user
    when = f"{version.created:%Y-%m-%d %H:%M:%S} UTC"
    notes: dict[str, str] = {
        Suggestion.Status.REJECTED: f"Withdrawn: the document was restored to its version of {when}, "
        "which does not hold this suggestion.",
        Suggestion.Status.STALE: f"Stale: restoring the document's version of {when} left only part of "
        "this suggestion's markup; clean it up.",
    }
    by = user if getattr(user, "pk", None) else None
    settled = 0
    with transaction.atomic():
        for suggestion, status in outcomes:
            done = Suggestion.objects.filter(pk=suggestion.pk, status=Suggestion.Status.PENDING).update(
                status=status,
                decided_at=timezone.now(),
                decided_by=by if status == Suggestion.Status.REJECTED else None,
                note=notes[status],
            )
            settled += done
            if done:  # a withdrawal is a decision like any other: the proposing session is told
                suggestion_decided.send(sender=Suggestion, pks=[suggestion.pk])
            if done and by is not None:
                LogEntry.objects.log_actions(
                    user_id=by.pk,
                    queryset=[suggestion],
                    action_flag=CHANGE,
                    change_message=notes[status],
                    single_object=True,
                )
    return settled


@on_restore
@asynccontextmanager
async def suggestions_follow_restore(restoring: Restoring) -> AsyncIterator[None]:
    store, room = restoring.store, restoring.room
    # Held: the editor follower must not read the restored text first and guess a decision from it.
    async with holding(store, room.doc_id):
        yield
        raw = str(room.doc.get(CONTENTS, type=Text))
        pending = await store.db(pending_rows, room.doc_id)
        outcomes = [(s, o) for s in pending if (o := restored_outcome(raw, s)) is not None]
        if outcomes:
            settled = await store.db(_settle, outcomes, restoring=restoring)
            rejected = sum(1 for _, o in outcomes if o == Suggestion.Status.REJECTED)
            restoring.notes.append(
                f"{settled} pending suggestion(s) no longer in the text: {rejected} withdrawn, "
                f"{len(outcomes) - rejected} stale."
            )
