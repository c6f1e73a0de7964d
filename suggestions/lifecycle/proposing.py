"""Proposing suggestions: edits of the accepted view written as CriticMarkup, new documents, moves and
deletions as rows.

Every change to a document is checked and written on the event loop in one synchronous stretch, so nothing
can slip in between the check and the write; connected clients see the result at once. A big edit is
planned on plain strings in a separate process (a Doc never leaves the loop), and written only if the text
it was planned on is still the document's.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone
from pycrdt import Assoc, StickyIndex, Text

from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import CONTENTS, room_text
from lensrelay.models import Document, Folder
from lensrelay.sync.presence import show_assistant
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import DocEntry, path_index
from suggestions.errors import SuggestionError
from suggestions.lifecycle.follow import holding
from suggestions.lifecycle.hunks import hunk_records
from suggestions.lifecycle.planning import (
    DELIMITER_REFUSAL,
    EditSpec,
    PlannedEdit,
    apply_edit_specs,
    byte_offsets,
    find_occurrences,
    plan_edit,
    plan_edit_off_loop,
    refuse_delimiters,
)
from suggestions.lifecycle.rebasing import rebased
from suggestions.markup.criticmarkup import (
    CLOSE_ADDITION,
    parse,
    render_addition,
    render_comment,
    render_metadata,
)
from suggestions.markup.records import HunkRecord
from suggestions.markup.rewriting import FORGED, RawEdit, apply_raw_edits
from suggestions.models import Suggestion
from suggestions.signals import suggestion_decided
from suggestions.webhooks import suggestion_created_record

__all__ = ["DELIMITER_REFUSAL", "EditSpec", "apply_edit_specs", "find_occurrences"]


@dataclass(frozen=True)
class Proposer:
    author: str
    token_id: int | None = None
    session_id: str = ""
    client_name: str = ""


@dataclass
class Outcome:
    suggestion: Suggestion | None
    occurrences: list[int]
    diff: str
    view_after: str
    superseded: list[str] = field(default_factory=list)

    @property
    def hunks(self) -> list[HunkRecord]:
        return self.suggestion.hunks if self.suggestion is not None else []

    @property
    def marked_for_deletion(self) -> int:
        """Characters the suggestion marks for deletion (its word-level hunks, not the old_string)."""
        return sum(len(h["old"]) for h in self.hunks)

    @property
    def inserted(self) -> int:
        return sum(len(h["new"]) for h in self.hunks)


# -- writing markup ------------------------------------------------------------------------------------


def write_plan(room: Room, raw: str, batches: Sequence[Sequence[RawEdit]]) -> None:
    """Apply batches of edits, each made on the text the previous one left (the first on ``raw``, with no
    await since it was read). Only markup and discarded text are deleted, so every kept character keeps
    its Yjs identity.

    The UTF-8 offsets are computed once, in one pass over the planned text, and edits go left to right,
    each shifted by what the ones before it added or removed: Yjs finds an offset inside a long item by
    walking it from the item's start, and each edit splits the item there, so left to right walks the
    text once where right to left walked it once per edit (a 100-edit multi_edit on a 250 KB note held
    the event loop 55 ms instead of 2).
    """
    with room.writing() as doc:  # under the proposer's own Yjs client id
        ytext = doc.get(CONTENTS, type=Text)
        current = str(ytext)
        if current != raw:
            raise SuggestionError("Document changed while the suggestion was written. Nothing was changed.")
        for edits in batches:
            offsets = byte_offsets(current, sorted({i for e in edits for i in (e.start, e.end)}))
            shift = 0
            for edit in sorted(edits, key=lambda e: e.start):
                start, end = offsets[edit.start] + shift, offsets[edit.end] + shift
                if end > start:
                    del ytext[start:end]
                if edit.insert:
                    ytext.insert(start, edit.insert)
                shift += len(edit.insert.encode()) - (end - start)
            current = apply_raw_edits(current, edits)


def _meta(proposer: Proposer, uid: str) -> str:
    return render_metadata(proposer.author, int(time.time() * 1000), suggestion_id=uid)


def _save_suggestion(suggestion: Suggestion, superseded: list[str]) -> Suggestion:
    with transaction.atomic():
        suggestion.save()
        suggestion_created_record(suggestion=suggestion)
        if superseded:
            pending = Suggestion.objects.filter(uid__in=superseded, status=Suggestion.Status.PENDING)
            pks = [
                pk
                for pk in pending.values_list("pk", flat=True)
                # One by one, each still pending: a row decided meanwhile is not reported as superseded.
                if Suggestion.objects.filter(pk=pk, status=Suggestion.Status.PENDING).update(
                    status=Suggestion.Status.SUPERSEDED, decided_at=timezone.now(), superseded_by=suggestion
                )
            ]
            if pks:  # withdrawn in favour of the new one: its session is told, as of any decision
                suggestion_decided.send(sender=Suggestion, pks=pks)
    return suggestion


def _new_row(*, entry: DocEntry, proposer: Proposer, tool: str, kind: str, comment: str | None) -> Suggestion:
    return Suggestion(
        kind=kind,
        folder_id=entry.folder_id,
        document=Document.objects.filter(doc_id=entry.doc_id).first(),
        doc_id=entry.doc_id,
        path=entry.user_path,
        token_id=proposer.token_id,
        author=proposer.author,
        session_id=proposer.session_id,
        client_name=proposer.client_name,
        tool=tool,
        comment=comment or "",
    )


# Below this many characters (the note and the edit together) an edit is planned on the loop, in the same
# synchronous stretch as its write; above it, in the planning process, so one big edit never stalls every
# client of the worker (planning costs about a second per 3 MB).
PLAN_ON_LOOP_CHARS = 32 * 1024
# A document edited live may change while a big edit is planned; the plan is remade this many times.
PLAN_ATTEMPTS = 3


_planning_locks: weakref.WeakKeyDictionary[Room, asyncio.Lock] = weakref.WeakKeyDictionary()


def _planning_lock(room: Room) -> asyncio.Lock:
    lock = _planning_locks.get(room)
    if lock is None:
        lock = _planning_locks[room] = asyncio.Lock()
    return lock


async def _planned_for_current_text(room: Room, **plan: Any) -> PlannedEdit:
    """A plan made on the room's text as it is now; no await lies between its check and the caller's
    next statement."""
    specs: Sequence[EditSpec] = plan["specs"]
    edit_chars = sum(len(s.old_string) + len(s.new_string) for s in specs) + len(plan["replacement"] or "")
    for _ in range(PLAN_ATTEMPTS):
        raw = room_text(room)
        if len(raw) + edit_chars <= PLAN_ON_LOOP_CHARS:
            return plan_edit(raw, **plan)
        planned = await plan_edit_off_loop(raw, **plan)
        # Someone typed meanwhile: the same plan holds on the text as it is if they typed apart from it.
        moved = rebased(planned, room_text(room))
        if moved is not None:
            return moved
    raise SuggestionError(
        "The document kept changing while the edit was planned. Nothing was changed; please try again."
    )


async def suggestion_propose_edits(
    *,
    store: DocStore,
    entry: DocEntry,
    proposer: Proposer,
    specs: Sequence[EditSpec] = (),
    tool: str,
    comment: str | None = None,
    dry_run: bool = False,
    replacement: str | None = None,
) -> Outcome:
    """Turn edits of the accepted view into one suggestion, written as word-level CriticMarkup hunks.

    Atomic: if any edit fails, nothing is written and the error names the edit. A big edit is planned in
    the planning process on the text as read, and written only if the document still holds that text.
    """
    if comment:
        refuse_delimiters(comment, which="comment")
    row = await store.db(_new_row, entry=entry, proposer=proposer, tool=tool, kind="edit", comment=comment)
    room = await store.get(entry.doc_id)
    if room is None:
        raise SuggestionError(f"Error: Document not found: {entry.user_path}")
    plan_for = dict(
        specs=list(specs),
        replacement=replacement,
        path=entry.user_path,
        meta=_meta(proposer, row.uid),
        uid=row.uid,
        comment=comment,
    )
    if dry_run:
        planned = await _planned_for_current_text(room, **plan_for)
        return Outcome(None, planned.occurrences, planned.diff, planned.new_view_text)
    # Until the rows say what happened, the follower must not read the superseded markup as decided. The
    # hold is taken before the plan: taking it awaits the database, and a person typing meanwhile changed
    # the text a plan made before it was for (most of an assistants' storm's edits were refused so).
    async with holding(store, entry.doc_id):
        # One plan at a time per note: assistants crowding a note would otherwise each make the others'
        # plans stale (the storm's 50 sessions got 3 edits through in 10 s).
        async with _planning_lock(room):
            planned = await _planned_for_current_text(room, **plan_for)
            plan = planned.plan
            write_plan(room, planned.raw, [plan.edits] + ([[planned.reply]] if planned.reply else []))
            records = _hunk_records_from(room, planned.changes, planned.around)
        row.hunks = records
        row.old_text = "\n…\n".join(r["old"] for r in records)
        row.new_text = "\n…\n".join(r["new"] for r in records)
        row.markup = "\n…\n".join(planned.markup)
        await room.flushed()
        await store.db(_save_suggestion, row, plan.superseded)
    # After the change went out, so clients know the text the cursor points into.
    await show_assistant(room, name=proposer.author, index=planned.markup_start)
    return Outcome(row, planned.occurrences, planned.diff, planned.new_view_text, plan.superseded)


def _hunk_records_from(
    room: Room, changes: list[tuple[int, int, str, str]], around: list[tuple[str, str]]
) -> list[HunkRecord]:
    """Sticky positions for the planned marks, which the text now holds at these byte offsets, with the
    words around each (planned with them)."""
    ytext = room.doc.get(CONTENTS, type=Text)
    if len(around) != len(changes):
        around = [("", "")] * len(changes)
    return [
        {
            "old": old,
            "new": new,
            "start": StickyIndex.new(ytext, start, Assoc.AFTER).to_json(),
            "end": StickyIndex.new(ytext, end, Assoc.BEFORE).to_json(),
            "before": before,
            "after": after,
        }
        for (start, end, old, new), (before, after) in zip(changes, around, strict=True)
    ]


# -- creating, moving and deleting documents -------------------------------------------------------------


async def suggestion_propose_create(
    *,
    store: DocStore,
    folder_id: int,
    relative_path: str,
    content: str,
    proposer: Proposer,
    comment: str | None = None,
) -> Suggestion:
    """A new document whose whole content is one `{++…++}` suggestion."""
    refuse_delimiters(content, which="content")
    if comment:
        refuse_delimiters(comment, which="comment")
    folder = await store.db(Folder.objects.get, pk=folder_id)
    probe = Suggestion()
    meta = _meta(proposer, probe.uid)
    body = render_addition(content, meta) if content else ""
    if comment:
        body += render_comment(comment, meta)
    if content and [m.content for m in parse(body)][:1] != [content]:
        raise SuggestionError(FORGED.format(delimiter=CLOSE_ADDITION))
    # document_create checks the path (rules, the trash in any spelling, collisions) before anything
    # reaches the folder document.
    document = await document_create(store=store, folder=folder, path=relative_path, text=body)
    entry = path_index(store).by_doc_id(document.doc_id)
    if entry is None:  # the mirror did not admit it: a rule document_create does not know of
        raise SuggestionError(f"Error: {folder.name}{relative_path} could not be created.")
    row = await store.db(
        _new_row, entry=entry, proposer=proposer, tool="write", kind="create", comment=comment
    )
    row.uid = probe.uid
    row.new_text = content
    room = await store.get(document.doc_id)
    if room is None:
        raise SuggestionError(f"Error: {entry.user_path} could not be created.")
    row.hunks = hunk_records(room, row.uid)
    row.markup = body
    await store.db(_save_suggestion, row, [])
    return row


async def suggestion_propose_move_or_delete(
    *,
    store: DocStore,
    entry: DocEntry,
    proposer: Proposer,
    new_path: str | None,
    comment: str | None,
    moves_folder: bool = False,
) -> Suggestion:
    kind = "move" if new_path is not None else "delete"
    if comment:
        refuse_delimiters(comment, which="comment")
    row = await store.db(_new_row, entry=entry, proposer=proposer, tool=kind, kind=kind, comment=comment)
    row.new_path = new_path or ""
    row.moves_folder = moves_folder
    await store.db(_save_suggestion, row, [])
    return row
