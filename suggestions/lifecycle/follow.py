"""Rows follow what happens to their markup in editors.

When a suggestion's markup disappears from its document (a person accepted, rejected or deleted it there)
the row becomes accepted, rejected or stale; when the markup is still there but no longer what was
proposed (a person typed inside it, or removed one of its delimiters) the row becomes stale, so nobody can
accept text the assistant never suggested.

Where it runs is `LENSRELAY_DERIVED_WORK` (lensrelay.docstore.derived): in the derive process (the
default), as a feed view that looks, each pass, at the notes the pass read as changed, the notes that got
new pending rows since the last pass, and the notes it had to leave for later; a row follows its markup
within about `LENSRELAY_DERIVE_POLL_SECONDS` plus the pass's time. Inline (one process, the test suite)
the server does the same look after each change, debounced by `DEBOUNCE_SECONDS`, the documents with
pending rows answered from memory (`PendingDocs`) so a note without any costs no query.

Proposals, decisions, clean-ups, undos and version restores change markup and rows together, in the
server (another process than the follower's, but for inline). Each holds the document in the database
(`holding`: a `SuggestionHold` committed before its first markup write, deleted after its markup writes
are logged and its rows committed; it expires after `HOLD_SECONDS` should its process die). The
follower, per document, reads the text (T1, caught up from the log), then in ONE statement the pending
rows and whether a hold stands, then catches up and reads the text again (T2). A held document is looked
at again on the next pass, edited or not. Otherwise a row is settled only when T1 and T2 show the same
decision: if the statement ran after an operation's hold was deleted, T2 comes after the operation and
agrees with the rows; if it ran before the hold was made, T1 comes before the operation and agrees with
them; either way a text the rows do not know yet cannot decide alone (and a row whose markup a reading
has not received yet is undecided there: its positions do not resolve). Readings that disagree leave the
document for the next pass. Settling is a conditional update (still pending), so a reviewer's decision is
never overwritten.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.signals import post_delete, post_save
from django.utils import timezone
from pycrdt import Doc, StickyIndex, Text

from lensrelay.docstore.derived import FeedStep, derived_debouncer
from lensrelay.docstore.later import Debounced
from lensrelay.docstore.offsets import char_index
from lensrelay.docstore.panics import failures_logged, is_panic
from lensrelay.docstore.remembered import RememberedDocIds
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import CONTENTS
from suggestions.kinds import MARKED_KINDS
from suggestions.lifecycle.hunks import change_texts, hunk_records
from suggestions.markup.criticmarkup import Change, mark_id, parse_changes
from suggestions.markup.integrity import markup_mismatch
from suggestions.markup.records import HunkRecord
from suggestions.markup.suggesting import typed_on_by_author
from suggestions.models import Suggestion, SuggestionHold
from suggestions.signals import suggestion_decided

logger = logging.getLogger(__name__)

# The derived view's name (registered in suggestions.apps) and, inline, how long it gathers changes.
FOLLOWER = "suggestion follower"
DEBOUNCE_SECONDS = 0.3
PENDING_REFRESH_SECONDS = 1.0
# Bumped by every row change this process makes: each store's memory reads the database again.
_generation = 0


def _rows_changed(sender: object, **kwargs: object) -> None:
    global _generation
    _generation += 1


post_save.connect(_rows_changed, sender=Suggestion, dispatch_uid="suggestions.lifecycle.follow.rows_saved")
post_delete.connect(
    _rows_changed, sender=Suggestion, dispatch_uid="suggestions.lifecycle.follow.rows_deleted"
)
suggestion_decided.connect(_rows_changed, dispatch_uid="suggestions.lifecycle.follow.rows_decided")


def pending_doc_ids() -> frozenset[str]:
    rows = Suggestion.objects.filter(status=Suggestion.Status.PENDING, kind__in=MARKED_KINDS)
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
    return outcome_in_doc(room.doc, suggestion, parsed=parsed)


def outcome_in_doc(doc: Doc[Any], suggestion: Suggestion, *, parsed: ParsedText | None = None) -> str | None:
    """`outcome_in_text` of a document (a room's, or a copy of it)."""
    ytext = doc.get(CONTENTS, type=Text)
    if parsed is None:
        parsed = ParsedText(str(ytext))
    raw = parsed.raw
    own = parsed.by_uid.get(suggestion.uid)
    if own:
        if markup_mismatch(raw, suggestion, parsed=own) is None or typed_on_by_author(suggestion, own):
            return None
        return Suggestion.Status.STALE
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


HOLD_SECONDS = 60.0


def _hold(doc_ids: Sequence[str]) -> list[int]:
    expires = timezone.now() + timedelta(seconds=HOLD_SECONDS)
    made = SuggestionHold.objects.bulk_create([SuggestionHold(doc_id=d, expires_at=expires) for d in doc_ids])
    return [hold.pk for hold in made]


def _release(pks: list[int]) -> None:
    # Expired holds of dead processes go with it.
    SuggestionHold.objects.filter(Q(pk__in=pks) | Q(expires_at__lt=timezone.now())).delete()


@asynccontextmanager
async def holding(store: DocStore, *doc_ids: str) -> AsyncIterator[None]:
    """Hold these documents while their markup and rows change: the hold is committed before the body
    runs (so before its first markup write) and deleted once the body is done (its writes logged: the
    body awaits `Room.flushed`, and its rows committed)."""
    ids = sorted(set(doc_ids))
    if not ids:
        yield
        return
    pks = await store.db(_hold, ids)
    try:
        yield
    finally:
        await store.db(_release, pks)


def _unexpired_holds(now: datetime) -> QuerySet[SuggestionHold]:
    return SuggestionHold.objects.filter(expires_at__gt=now)


def _pending_marked() -> tuple[str, list[str]]:
    """The plain-SQL condition (and its parameters) of a pending row whose kind leaves markup in the text."""
    kinds = ", ".join(["%s"] * len(MARKED_KINDS))
    return f"status = %s AND kind IN ({kinds})", [
        str(Suggestion.Status.PENDING.value),
        *map(str, MARKED_KINDS),
    ]


def pending_or_held(doc_ids: Sequence[str]) -> tuple[set[str], set[str]]:
    """Of these documents, those with pending rows and those held, each slice in one statement.

    Plain SQL: the derive process asks on every pass, and building the ORM's union of two querysets cost
    more than the database's answer (1.3 ms of CPU a pass at a note typed into, issue 36)."""
    q = connection.ops.quote_name
    rows, holds = q(Suggestion._meta.db_table), q(SuggestionHold._meta.db_table)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    marked, marked_params = _pending_marked()
    pending: set[str] = set()
    held: set[str] = set()
    ids = sorted(doc_ids)
    with connection.cursor() as cursor:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"SELECT doc_id, 0 FROM {rows} WHERE doc_id IN ({marks}) AND {marked}"
                f" UNION SELECT doc_id, 1 FROM {holds} WHERE doc_id IN ({marks}) AND expires_at > %s",
                [*chunk, *marked_params, *chunk, now],
            )
            for doc_id, is_held in cursor.fetchall():
                (held if is_held else pending).add(doc_id)
    return pending, held


def pending_and_holds(doc_ids: Sequence[str]) -> tuple[dict[str, list[Suggestion]], set[str]]:
    """The pending rows of these documents and which are held, read in one statement (one snapshot)."""
    holds = _unexpired_holds(timezone.now()).filter(doc_id=OuterRef("doc_id"))
    rows = Suggestion.objects.filter(
        doc_id__in=list(doc_ids), status=Suggestion.Status.PENDING, kind__in=MARKED_KINDS
    ).annotate(held=Exists(holds))
    by_doc: dict[str, list[Suggestion]] = {}
    held: set[str] = set()
    for row in rows:
        by_doc.setdefault(row.doc_id, []).append(row)
        if row.held:  # type: ignore[attr-defined]
            held.add(row.doc_id)
    return by_doc, held


def new_pending(*, above: int) -> list[tuple[int, str]]:
    """(pk, doc_id) of the pending rows whose pk is above ``above`` (plain SQL, as `pending_or_held`: asked
    on every pass, 0.6 ms of CPU through the ORM)."""
    marked, marked_params = _pending_marked()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, doc_id FROM {connection.ops.quote_name(Suggestion._meta.db_table)}"
            f" WHERE id > %s AND {marked}",
            [above, *marked_params],
        )
        return [(int(pk), str(doc_id)) for pk, doc_id in cursor.fetchall()]


def _copy(room: Room) -> Doc[Any]:
    """The room's document as it is now, to read later while the room goes on changing."""
    copy: Doc[Any] = Doc()
    copy.apply_update(room.doc.get_update())
    return copy


def _outcomes(doc: Doc[Any], rows: Sequence[Suggestion], parsed: ParsedText) -> dict[int, str]:
    return {s.pk: o for s in rows if (o := outcome_in_doc(doc, s, parsed=parsed)) is not None}


async def look(store: DocStore, doc_ids: Sequence[str]) -> set[str]:
    """Bring the pending rows of these documents in step with their markup (see the module docstring);
    returns the documents to look at again (held, or the two readings disagreed)."""
    again: set[str] = set()
    first: dict[str, Doc[Any]] = {}
    for doc_id in sorted(set(doc_ids)):
        room = await store.get(doc_id)
        if room is not None and room.kind == "content":
            first[doc_id] = _copy(room)  # T1
    if not first:
        return again
    by_doc, held = await store.db(pending_and_holds, list(first))  # one snapshot
    again |= held
    await _person_rows_caught_up(store, {d: rows for d, rows in by_doc.items() if d not in held})
    firsts: dict[str, tuple[ParsedText, dict[int, str]]] = {}
    for doc_id, doc in first.items():
        rows = by_doc.get(doc_id)
        if doc_id in held or not rows:
            continue
        parsed = ParsedText(str(doc.get(CONTENTS, type=Text)))
        if outcomes := _outcomes(doc, rows, parsed):
            firsts[doc_id] = parsed, outcomes
    if not firsts:
        return again
    await store.catch_up()
    decided: list[tuple[int, str]] = []
    for doc_id, (parsed, outcomes) in firsts.items():
        room = store.rooms.get(doc_id)
        if room is None:
            again.add(doc_id)
            continue
        raw = str(room.doc.get(CONTENTS, type=Text))  # T2
        now = _outcomes(room.doc, by_doc[doc_id], parsed if raw == parsed.raw else ParsedText(raw))
        for pk, outcome in outcomes.items():
            if now.get(pk) == outcome:
                decided.append((pk, outcome))
            else:
                again.add(doc_id)
    if decided:
        await store.db(_settle, decided)
    return again


def _caught_up(updates: list[tuple[int, list[HunkRecord], tuple[str, str, str]]]) -> None:
    for pk, hunks, (old_text, new_text, markup) in updates:
        Suggestion.objects.filter(pk=pk, status=Suggestion.Status.PENDING).update(
            hunks=hunks, old_text=old_text, new_text=new_text, markup=markup
        )


async def _person_rows_caught_up(store: DocStore, by_doc: dict[str, list[Suggestion]]) -> None:
    """A person's pending suggestion they (or someone editing live) typed on in: its row takes the text its
    marks hold now (suggestions.lifecycle.suggesting does the same a moment after the person's typing)."""
    updates = []
    for doc_id, rows in by_doc.items():
        room = store.rooms.get(doc_id)
        people = [row for row in rows if row.person_id is not None]
        if room is None or not people:
            continue
        parsed = ParsedText(str(room.doc.get(CONTENTS, type=Text)))
        for row in people:
            own = parsed.by_uid.get(row.uid)
            if own and typed_on_by_author(row, own) and markup_mismatch(parsed.raw, row, parsed=own):
                updates.append((row.pk, hunk_records(room, row.uid), change_texts(parsed.raw, own)))
                row.hunks = updates[-1][1]
    if updates:
        await store.db(_caught_up, updates)


class FollowerView:
    """The follower as a feed view of the derive process: every pass, the changed notes, the notes that
    got new pending rows and the notes left for later (held, or read differently twice). Its first pass
    (a derive process started afresh) looks at every note with pending rows once."""

    WINDOW = 1000  # pks re-read below the highest seen: rows of concurrent transactions commit out of order

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.again: set[str] = set()
        self.top = 0
        self.seen: set[int] = set()
        self.folded: dict[str, int] = {}

    async def step(self, feed: FeedStep) -> None:
        content = feed.of_kind("content")
        changed = {row.doc_id for row in feed.rows if row.doc_id in content}
        for doc_id, upto in feed.compacted:
            if doc_id in content and self.folded.get(doc_id) != upto:
                changed.add(doc_id)
                self.folded[doc_id] = upto
        fresh = await self.store.db(new_pending, above=max(0, self.top - self.WINDOW))
        for pk, doc_id in fresh:
            if pk not in self.seen:
                changed.add(doc_id)
        self.seen |= {pk for pk, _ in fresh}
        self.top = max([self.top, *self.seen])
        self.seen = {pk for pk in self.seen if pk > self.top - self.WINDOW}
        candidates = changed | self.again
        if not candidates:
            return
        pending, held = await self.store.db(pending_or_held, sorted(candidates))
        self.again = set(held)
        looked = pending - held
        if looked - changed:
            # Notes this pass read nothing of: T1 is read caught up, like the changed notes' rooms.
            await self.store.catch_up()
        self.again |= await look(self.store, sorted(looked))


async def follow_changed(store: DocStore, doc_ids: frozenset[str]) -> None:
    """Inline only (in process mode the derive process follows, FollowerView): the notes this process
    changed, a moment after."""
    for doc_id in sorted(doc_ids):
        with failures_logged(logger, "following the suggestions of %s", doc_id):
            memory = pending_docs(store)
            if doc_id not in await memory.current():
                memory.skipped()
                continue
            if doc_id in await look(store, [doc_id]):
                follower_for(store).add(doc_id)  # held, or read differently twice: once more after the delay


def follower_for(store: DocStore) -> Debounced:
    return derived_debouncer(store, FOLLOWER)
