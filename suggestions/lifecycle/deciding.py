"""Deciding suggestions: accept or reject in the live document, exactly once, recorded with its reviewer."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pycrdt import Text

from lensrelay.docstore.offload import offloaded
from lensrelay.docstore.offsets import text_delete, text_replace
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.docstore.texts import CONTENTS
from lensrelay.text.counts import counted
from lensrelay.vault.paths import DocEntry, path_index
from suggestions.errors import StaleSuggestion, SuggestionError
from suggestions.kinds import Effect, rules_of
from suggestions.lifecycle.claims import (
    Claim,
    already_decided,
    claim_decision,
    release_claim,
    settle_claim,
    stale_claim,
)
from suggestions.lifecycle.filecreate import creates_a_file, file_create_apply
from suggestions.lifecycle.filetext import file_replacement_apply
from suggestions.lifecycle.follow import holding
from suggestions.lifecycle.moving import move_document, move_folder, remove_document
from suggestions.markup.criticmarkup import Change, Span, accept_edits, own_changes, reject_edits
from suggestions.markup.integrity import markup_mismatch
from suggestions.markup.records import RegionRecord, UndoRecord
from suggestions.markup.revising import apply_replacements, revision_edits, revision_refusal
from suggestions.markup.suggesting import typed_on_by_author
from suggestions.markup.undo_record import recorded, settled_regions
from suggestions.models import Suggestion

logger = logging.getLogger(__name__)

STALE_GONE = "suggestion no longer found in document"
STALE_PARTIAL = "part of the suggestion's markup was edited away"


# Finding a suggestion's marks parses the whole note (about 10 ms for 100 KB holding 500 suggestions, paid
# for each of them by Accept all): above this size the parse runs in a heavy-work process and the loop only
# checks that the note did not change meanwhile.
PARSE_ON_LOOP_CHARS = 32 * 1024
PARSE_ATTEMPTS = 3


async def _own_changes(room: Room, uid: str) -> tuple[str, list[Change]]:
    """The note's text now and the suggestion's changes in it; no await lies between the check that the
    text is still the one parsed and the caller's next statement. A note that keeps changing meanwhile (an
    Accept all on it, say) is parsed on the loop the last time, so the decision is never starved."""
    ytext = room.doc.get(CONTENTS, type=Text)
    for _ in range(PARSE_ATTEMPTS - 1):
        raw = str(ytext)
        if len(raw) <= PARSE_ON_LOOP_CHARS:
            break
        changes = await offloaded(own_changes, raw, uid)
        if str(ytext) == raw:
            return raw, changes
    raw = str(ytext)
    return raw, own_changes(raw, uid)


def _decide_markup(
    room: Room,
    suggestion: Suggestion,
    *,
    accept: bool,
    raw: str,
    changes: list[Change],
    revision: Sequence[str] = (),
) -> list[RegionRecord]:
    """Accept or reject the suggestion's own marks, only if they are still exactly what was proposed.

    Each hunk's recorded old and new text is compared with the markup first: if a person typed inside
    it, accepting would delete their words with the proposed ones, so the suggestion is stale instead
    and nothing changes. Only marks carrying this suggestion's id are touched; a comment or another
    suggestion that merely touches them stays. A ``revision`` (the reviewer's inserted texts, one per
    hunk) is written into the marks first, in the same transaction: everyone sees one change. Returns
    what undo needs to write the markup back.
    """
    if not changes:
        raise StaleSuggestion(STALE_GONE)
    if len(changes) < len(suggestion.hunks):
        raise StaleSuggestion(STALE_PARTIAL)
    mismatch = markup_mismatch(raw, suggestion, parsed=changes)
    if mismatch is not None and typed_on_by_author(suggestion, changes):
        # Its row follows a moment after the person stops typing (suggestions.lifecycle.suggesting).
        raise SuggestionError(f"{suggestion.author} is still typing this suggestion: try again in a moment")
    if mismatch is not None:
        raise StaleSuggestion(mismatch)
    revising = revision_edits(raw, suggestion.uid, revision) if revision else []
    # As the reviewer: who removed the marks (and wrote a revision) is kept in the note's `users` map.
    with room.writing() as doc:
        ytext = doc.get(
            CONTENTS, type=Text
        )  # its text is ``raw``, whose changes of this suggestion are given
        current = raw
        if revising:
            for edit in reversed(revising):
                text_replace(ytext, current=current, start=edit.start, end=edit.end, value=edit.insert)
            current = apply_replacements(raw, revising)
            changes = own_changes(current, suggestion.uid)
        before = current
        per_change = [accept_edits(before, c) if accept else reject_edits(before, c) for c in changes]
        spans: list[Span] = [span for change_spans in per_change for span in change_spans]
        for span in sorted(spans, key=lambda s: s.start, reverse=True):
            text_delete(ytext, current=current, start=span.start, end=span.end)
            current = current[: span.start] + current[span.end :]
    return recorded(current, settled_regions(before, per_change))


@dataclass
class Decision:
    suggestion: Suggestion
    ok: bool
    reason: str = ""
    detail: str = ""


def _apply_row(target: Suggestion, row: Suggestion | None) -> Suggestion:
    """Bring the caller's copy up to date with the stored row (callers keep using their object)."""
    if row is not None:
        for name in ("status", "decided_at", "decided_by_id", "note", "revision"):
            setattr(target, name, getattr(row, name))
        target.decided_by = row.decided_by
    return target


NOTHING_TO_UNDO: UndoRecord = {}
# A decision that changed no document (a rejected move, delete or file replacement) is undone by making the
# row pending again.
NOTHING_CHANGED: UndoRecord = {"regions": []}


def _deleted_by(suggestion: Suggestion, user: Any) -> str:
    """Who deleted a note by deciding: what the trash shows."""
    name = user.get_username() if getattr(user, "pk", None) else "a reviewer"
    verb = "accepting" if rules_of(suggestion).trashed_on else "rejecting"
    return f"{name} ({verb} {suggestion.author}'s suggestion {suggestion.uid})"


# What accepting does for the kinds whose change is not markup in the note (``KindRules.accepting``).
# Rejecting them changes no document.
async def _accept_move(
    store: DocStore, entry: DocEntry, suggestion: Suggestion, user: Any
) -> tuple[str, UndoRecord]:
    links = await move_document(store, entry, suggestion.new_path)
    return f"{counted(links, 'link')} rewritten", NOTHING_TO_UNDO


async def _accept_trash(
    store: DocStore, entry: DocEntry, suggestion: Suggestion, user: Any
) -> tuple[str, UndoRecord]:
    await remove_document(store, entry, by=_deleted_by(suggestion, user))
    return "", NOTHING_TO_UNDO


async def _accept_replace_file(
    store: DocStore, entry: DocEntry, suggestion: Suggestion, user: Any
) -> tuple[str, UndoRecord]:
    # No markup in the file: rejecting changes nothing, accepting writes the new content.
    await file_replacement_apply(store, entry, suggestion)
    return "", NOTHING_TO_UNDO


_ACCEPTING: dict[
    Effect, Callable[[DocStore, DocEntry, Suggestion, Any], Awaitable[tuple[str, UndoRecord]]]
] = {
    "move": _accept_move,
    "trash": _accept_trash,
    "replace_file": _accept_replace_file,
}


async def _change_document(
    store: DocStore,
    suggestion: Suggestion,
    *,
    accept: bool,
    user: Any = None,
    flush: bool = True,
    revision: Sequence[str] = (),
) -> tuple[str, UndoRecord]:
    """Carry out the decision in the live documents; returns what it did and how to undo it (empty when
    undo is not offered). Raises SuggestionError. With ``flush`` False a markup decision returns before
    its change is logged: the caller waits for the room's writes (``Room.flushed``) before settling."""
    if suggestion.moves_folder:
        if accept:
            return f"{counted(await move_folder(store, suggestion), 'link')} rewritten", NOTHING_TO_UNDO
        return "", NOTHING_CHANGED
    if creates_a_file(suggestion):
        if accept:
            doc_id = await file_create_apply(store, suggestion)
            await store.db(Suggestion.objects.filter(pk=suggestion.pk).update, doc_id=doc_id)
            suggestion.doc_id = doc_id
        return "", NOTHING_TO_UNDO if accept else NOTHING_CHANGED
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(suggestion.doc_id)
    if entry is None and suggestion.folder_id is not None:
        # Another process may have made the document or its folder a moment ago: ask the database before
        # calling the suggestion stale.
        await index.refresh_folder(suggestion.folder_id)
        entry = index.by_doc_id(suggestion.doc_id)
    if entry is None:
        raise StaleSuggestion("the document no longer exists")
    rules = rules_of(suggestion)
    if not rules.marked:
        if not accept:
            return "", NOTHING_CHANGED
        return await _ACCEPTING[rules.accepting](store, entry, suggestion, user)
    room = await store.get(suggestion.doc_id)
    if room is None:
        raise StaleSuggestion("the document no longer exists")
    raw, changes = await _own_changes(room, suggestion.uid)
    regions = _decide_markup(
        room, suggestion, accept=accept, raw=raw, changes=changes, revision=revision if accept else ()
    )
    removes = rules.trashed_on is accept  # a rejected new note goes with its markup
    if flush or removes:
        await room.flushed()
    if removes:
        await remove_document(store, entry, by=_deleted_by(suggestion, user))
        return "", NOTHING_TO_UNDO
    return "", {"regions": regions}


def _changed_only(suggestion: Suggestion, revision: Sequence[str]) -> list[str]:
    """The revision, or nothing when it changes none of the proposed texts (a plain accept)."""
    return list(revision) if list(revision) != suggestion.proposed_insertions() else []


def _marked(suggestions: Sequence[Suggestion]) -> list[str]:
    """The documents whose markup deciding these suggestions changes."""
    return [s.doc_id for s in suggestions if rules_of(s).marked]


async def suggestion_decide(
    *,
    store: DocStore,
    suggestion: Suggestion,
    user: Any,
    accept: bool,
    note: str = "",
    batch: str = "",
    revision: Sequence[str] = (),
) -> Decision:
    """Accept or reject one pending suggestion in the live document, exactly once.

    The decision is claimed in the database first (see suggestions/lifecycle/claims.py), so of reviewers
    racing in any number of processes one changes the document and the others are told who decided; a stale
    suggestion is marked and refused, and a refused change leaves it pending. ``batch`` names a bulk
    decision, so that it can be undone as a whole. ``revision`` accepts with changes: the inserted text
    of each hunk as the reviewer changed it (see suggestions/markup/revising.py).
    """
    revision = _changed_only(suggestion, revision) if accept else []
    if revision:
        refusal = revision_refusal(suggestion.proposed_insertions(), revision)
        if refusal is None and not rules_of(suggestion).marked:
            refusal = "only a change marked in a note can be accepted with changes"
        if refusal is not None:
            return Decision(suggestion, False, f"cannot accept with changes: {refusal}")
    claim = await store.db(claim_decision, pk=suggestion.pk, accept=accept, user=user)
    if not isinstance(claim, Claim):
        return Decision(_apply_row(suggestion, claim), False, already_decided(claim))
    # Held from the markup's change until the row is settled or released, so the follower never records
    # the markup's removal as decided in an editor.
    async with holding(store, *_marked([suggestion])):
        try:
            detail, undo = await _change_document(
                store, suggestion, accept=accept, user=user, revision=revision
            )
        except StaleSuggestion as exc:
            await store.db(stale_claim, claim=claim)
            suggestion.status, suggestion.decided_by = Suggestion.Status.STALE, None
            return Decision(suggestion, False, str(exc))
        except SuggestionError as exc:
            await store.db(release_claim, claim=claim)
            return Decision(suggestion, False, str(exc))
        except BaseException:
            await store.db(release_claim, claim=claim)
            raise
        row = await store.db(
            settle_claim, claim=claim, user=user, note=note, undo=undo, batch=batch, revision=revision
        )
    if row is None:
        logger.warning("the decision on suggestion %s was taken over while it was applied", suggestion.uid)
        return Decision(suggestion, False, "the decision took too long and was taken over by another")
    return Decision(_apply_row(suggestion, row), True, detail=detail)


# A bulk decision is claimed and settled a slice at a time (two trips to the database and one wait for the
# writes to be logged per slice, instead of three trips and a wait per suggestion), and hands the event loop
# back whenever it has decided for BULK_LOOP_BUDGET_SECONDS: every other client of the worker keeps being
# served while 500 suggestions are accepted. Each suggestion is still claimed, changed and settled on its
# own, exactly as when decided alone.
BULK_SLICE = 25
BULK_LOOP_BUDGET_SECONDS = 0.005


async def suggestion_bulk_decide(
    *, store: DocStore, suggestions: Sequence[Suggestion], user: Any, accept: bool, note: str = ""
) -> list[Decision]:
    batch = uuid.uuid4().hex if len(suggestions) > 1 else ""
    decisions: list[Decision] = []
    for start in range(0, len(suggestions), BULK_SLICE):
        chosen = suggestions[start : start + BULK_SLICE]
        decisions += await _decide_slice(store, chosen, user=user, accept=accept, note=note, batch=batch)
    return decisions


def _claim_each(*, pks: list[int], accept: bool, user: Any) -> list[Claim | Suggestion | None]:
    return [claim_decision(pk=pk, accept=accept, user=user) for pk in pks]


def _settle_each(
    *, settling: list[tuple[Claim, UndoRecord]], user: Any, note: str, batch: str
) -> list[Suggestion | None]:
    return [settle_claim(claim=c, user=user, note=note, undo=undo, batch=batch) for c, undo in settling]


async def _decide_slice(
    store: DocStore, suggestions: Sequence[Suggestion], *, user: Any, accept: bool, note: str, batch: str
) -> list[Decision]:
    """:func:`suggestion_decide` for each of ``suggestions``, with one claim trip, one settle trip."""
    claims = await store.db(_claim_each, pks=[s.pk for s in suggestions], accept=accept, user=user)
    marked = [s for s, c in zip(suggestions, claims, strict=True) if isinstance(c, Claim)]
    async with holding(store, *_marked(marked)):
        return await _decide_claimed(
            store, suggestions, claims, user=user, accept=accept, note=note, batch=batch
        )


async def _decide_claimed(
    store: DocStore,
    suggestions: Sequence[Suggestion],
    claims: list[Claim | Suggestion | None],
    *,
    user: Any,
    accept: bool,
    note: str,
    batch: str,
) -> list[Decision]:
    decisions: dict[int, Decision] = {}
    unsettled = {i: c for i, c in enumerate(claims) if isinstance(c, Claim)}
    changed: dict[int, tuple[str, UndoRecord]] = {}
    rooms: dict[str, Room] = {}  # whose writes are waited for before settling
    try:
        ran_since = time.monotonic()
        for i, (suggestion, claim) in enumerate(zip(suggestions, claims, strict=True)):
            if not isinstance(claim, Claim):
                decisions[i] = Decision(_apply_row(suggestion, claim), False, already_decided(claim))
                continue
            try:
                changed[i] = await _change_document(store, suggestion, accept=accept, user=user, flush=False)
                if (room := store.rooms.get(suggestion.doc_id)) is not None:
                    rooms[suggestion.doc_id] = room
            except StaleSuggestion as exc:
                del unsettled[i]
                await store.db(stale_claim, claim=claim)
                suggestion.status, suggestion.decided_by = Suggestion.Status.STALE, None
                decisions[i] = Decision(suggestion, False, str(exc))
            except SuggestionError as exc:
                del unsettled[i]
                await store.db(release_claim, claim=claim)
                decisions[i] = Decision(suggestion, False, str(exc))
            if time.monotonic() - ran_since > BULK_LOOP_BUDGET_SECONDS:
                await asyncio.sleep(0)  # the clients of every other document first
                ran_since = time.monotonic()
        for room in rooms.values():
            await room.flushed()
        settling = sorted(changed)
        rows = await store.db(
            _settle_each,
            settling=[(unsettled[i], changed[i][1]) for i in settling],
            user=user,
            note=note,
            batch=batch,
        )
        unsettled.clear()
    except BaseException:
        for claim in unsettled.values():
            await store.db(release_claim, claim=claim)
        raise
    for i, row in zip(settling, rows, strict=True):
        suggestion = suggestions[i]
        if row is None:
            logger.warning(
                "the decision on suggestion %s was taken over while it was applied", suggestion.uid
            )
            decisions[i] = Decision(
                suggestion, False, "the decision took too long and was taken over by another"
            )
        else:
            decisions[i] = Decision(_apply_row(suggestion, row), True, detail=changed[i][0])
    return [decisions[i] for i in range(len(suggestions))]


# -- sync entry points for the admin -------------------------------------------------------------------


def suggestion_accept(
    *, suggestion: Suggestion, user: Any, note: str = "", revision: Sequence[str] = ()
) -> Decision:
    return run_on_store(
        lambda store: suggestion_decide(
            store=store, suggestion=suggestion, user=user, accept=True, note=note, revision=revision
        )
    )


def suggestion_reject(*, suggestion: Suggestion, user: Any, note: str = "") -> Decision:
    return run_on_store(
        lambda store: suggestion_decide(
            store=store, suggestion=suggestion, user=user, accept=False, note=note
        )
    )


def suggestion_bulk(
    *, suggestions: Sequence[Suggestion], user: Any, accept: bool, note: str = ""
) -> list[Decision]:
    return run_on_store(
        lambda store: suggestion_bulk_decide(
            store=store, suggestions=suggestions, user=user, accept=accept, note=note
        )
    )
