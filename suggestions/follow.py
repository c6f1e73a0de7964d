"""Rows follow what happens to their markup in editors, within a second.

When a suggestion's markup disappears from its document (a person accepted, rejected or deleted it there)
the row becomes accepted, rejected or stale; when the markup is still there but no longer what was
proposed (a person typed inside it, or removed one of its delimiters) the row becomes stale at once, so
nobody can accept text the assistant never suggested.

It stays in the server process, beside the live document (not in the derive process): it must see the
markup in the replica the editors change, and it coordinates with proposals and decisions running in this
process (`holding`, `deciding_here`). It is off the per-update path all the same: an edit only adds the
document to a debounced set, and which documents have pending suggestions is answered from memory
(`PendingDocs`), kept current by this process's row changes (signals) and refreshed from the database at
most once per `PENDING_REFRESH_SECONDS` for rows other processes wrote; a document that turns out to have
gained pending rows meanwhile is looked at once more. Only a document with pending rows costs a query.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils import timezone
from pycrdt import StickyIndex, Text

from lensrelay.docstore.later import Later
from lensrelay.docstore.offsets import char_index
from lensrelay.docstore.panics import is_panic
from lensrelay.docstore.remembered import RememberedDocIds
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, on_change
from lensrelay.docstore.texts import CONTENTS
from suggestions.criticmarkup import Change, mark_id, parse_changes
from suggestions.integrity import markup_mismatch
from suggestions.models import Suggestion
from suggestions.selectors import pending_rows
from suggestions.signals import suggestion_decided

logger = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.3
PENDING_REFRESH_SECONDS = 1.0
# Bumped by every row change this process makes: each store's memory reads the database again.
_generation = 0


def _rows_changed(sender: object, **kwargs: object) -> None:
    global _generation
    _generation += 1


post_save.connect(_rows_changed, sender=Suggestion, dispatch_uid="suggestions.follow.rows_saved")
post_delete.connect(_rows_changed, sender=Suggestion, dispatch_uid="suggestions.follow.rows_deleted")
suggestion_decided.connect(_rows_changed, dispatch_uid="suggestions.follow.rows_decided")


def pending_doc_ids() -> frozenset[str]:
    kinds = [Suggestion.Kind.EDIT, Suggestion.Kind.CREATE]
    rows = Suggestion.objects.filter(status=Suggestion.Status.PENDING, kind__in=kinds)
    return frozenset(rows.values_list("doc_id", flat=True).distinct())


class PendingDocs(RememberedDocIds):
    """Per store: the documents with pending suggestions, from memory."""

    def refresh_seconds(self) -> float:
        return PENDING_REFRESH_SECONDS

    def generation(self) -> int:
        return _generation

    def read(self) -> frozenset[str]:
        return pending_doc_ids()

    def skipped(self) -> None:
        """A changed document was passed over as having no pending rows: read again once this memory is
        due, so a row another process wrote meanwhile is still followed without a further edit."""
        self.recheck_when_due()

    async def _refresh(self) -> None:
        previous = self.doc_ids
        await super()._refresh()
        # Rows another process wrote since the last read: their markup may already be gone here.
        follower = follower_for(self.store)
        for doc_id in self.doc_ids - previous:
            room = self.store.rooms.get(doc_id)
            if room is not None and room.kind == "content":
                follower.add(doc_id)


def pending_docs(store: DocStore) -> PendingDocs:
    return store.attached(PendingDocs)


def _settle(decided: list[tuple[int, str]]) -> None:
    now = timezone.now()
    with transaction.atomic():
        settled = [
            pk
            for pk, status in decided
            if Suggestion.objects.filter(pk=pk, status=Suggestion.Status.PENDING).update(
                status=status, decided_at=now
            )
        ]
        if settled:
            suggestion_decided.send(sender=Suggestion, pks=settled)


class ParsedText:
    """A document's text and its changes by suggestion id, read and parsed once for all its rows: checked
    row by row, a note with 500 pending suggestions was read and parsed 500 times, on the event loop."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.by_uid: dict[str, list[Change]] = {}
        for change in parse_changes(raw):
            for uid in {mark_id(m) for m in change.all_marks} - {None}:
                self.by_uid.setdefault(uid, []).append(change)  # type: ignore[arg-type]


def outcome_in_text(room: Room, suggestion: Suggestion, *, parsed: ParsedText | None = None) -> str | None:
    """None while the markup is there as proposed; otherwise what the text shows became of it.
    ``parsed`` is the room's text as it is now, when the caller checks several rows."""
    ytext = room.doc.get(CONTENTS, type=Text)
    if parsed is None:
        parsed = ParsedText(str(ytext))
    raw = parsed.raw
    own = parsed.by_uid.get(suggestion.uid)
    if own:
        return None if markup_mismatch(raw, suggestion, parsed=own) is None else Suggestion.Status.STALE
    if f'"id":{json.dumps(suggestion.uid)}' in raw:
        return Suggestion.Status.STALE  # its metadata is left without a working mark: broken, not decided
    verdicts = set()
    for hunk in suggestion.hunks:
        try:
            start = char_index(raw, StickyIndex.from_json(hunk["start"], ytext).get_index())
        except (IndexError, KeyError, ValueError, TypeError):
            return Suggestion.Status.STALE
        except BaseException as exc:
            # pycrdt panics on a position whose item this replica has not received yet (the row
            # arrived before the markup): undecided for now, looked at again on the next change.
            if not is_panic(exc):
                raise
            logger.warning("suggestion %s: position not resolvable here yet", suggestion.pk)
            return None
        new, old = hunk.get("new", ""), hunk.get("old", "")
        if new and raw.startswith(new, start):
            verdicts.add(Suggestion.Status.ACCEPTED)
        elif old and raw.startswith(old, start):
            verdicts.add(Suggestion.Status.REJECTED)
        elif not new and old:
            verdicts.add(Suggestion.Status.ACCEPTED)  # an accepted deletion leaves nothing behind
        elif not old and new:
            verdicts.add(Suggestion.Status.REJECTED)
        else:
            verdicts.add(Suggestion.Status.STALE)
    return verdicts.pop() if len(verdicts) == 1 else Suggestion.Status.STALE


class _Holds:
    """Documents whose rows are being written: the follower waits, so it never reads markup that was
    just rewritten (a superseded suggestion's, say) against rows that do not say so yet."""

    def __init__(self, store: DocStore) -> None:
        self.count: Counter[str] = Counter()
        self.released = asyncio.Condition()


@asynccontextmanager
async def holding(store: DocStore, doc_id: str) -> AsyncIterator[None]:
    holds = store.attached(_Holds)
    holds.count[doc_id] += 1
    try:
        yield
    finally:
        holds.count[doc_id] -= 1
        async with holds.released:
            holds.released.notify_all()


async def _unheld(store: DocStore, doc_id: str) -> None:
    holds = store.attached(_Holds)
    async with holds.released:
        await holds.released.wait_for(lambda: holds.count[doc_id] <= 0)


class _DecidedHere:
    """Suggestions this process is deciding itself: their markup goes before their row says so, and the
    decision records who made it, so the follower must not record it first as decided in an editor."""

    def __init__(self, store: DocStore) -> None:
        self.uids: dict[str, set[str]] = {}


def deciding_here(store: DocStore, doc_id: str, uid: str) -> None:
    store.attached(_DecidedHere).uids.setdefault(doc_id, set()).add(uid)


def not_deciding_here(store: DocStore, doc_id: str, uid: str) -> None:
    """The suggestion is pending again (its decision was undone): follow its markup like any other's."""
    store.attached(_DecidedHere).uids.get(doc_id, set()).discard(uid)


def _follower(store: DocStore) -> Later:
    async def follow(doc_id: str) -> None:
        await _unheld(store, doc_id)
        room = store.rooms.get(doc_id)
        if room is None:
            return
        memory = pending_docs(store)
        if doc_id not in await memory.current():
            memory.skipped()
            return
        pending = await store.db(pending_rows, doc_id)
        if store.attached(_Holds).count[doc_id] > 0:
            return  # a proposal began meanwhile; its write brings this document round again
        here = store.attached(_DecidedHere).uids.setdefault(doc_id, set())
        here.intersection_update(s.uid for s in pending)  # recorded by now: forget them
        followed = [s for s in pending if s.uid not in here]
        parsed = ParsedText(str(room.doc.get(CONTENTS, type=Text))) if followed else None
        decided = [(s.pk, o) for s in followed if (o := outcome_in_text(room, s, parsed=parsed)) is not None]
        if decided:
            await store.db(_settle, decided)

    return Later(store, follow, delay=lambda: DEBOUNCE_SECONDS)


def follower_for(store: DocStore) -> Later:
    return store.attached(_follower)


@on_change
def _content_changed(room: Room, updates: Sequence[bytes]) -> None:
    if room.kind == "content" and room.changed_here:  # once, by the process where the edit happened
        follower_for(room.store).add(room.doc_id)
