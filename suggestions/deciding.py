"""Deciding suggestions: accept or reject in the live document, exactly once, recorded with its reviewer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore.offsets import text_delete
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, store_session
from lensrelay.paths import path_index
from lensrelay.texts import CONTENTS
from suggestions.criticmarkup import Span, accept_edits, own_changes, reject_edits
from suggestions.errors import StaleSuggestion, SuggestionError
from suggestions.follow import deciding_here
from suggestions.integrity import markup_mismatch
from suggestions.models import Suggestion
from suggestions.moving import move_document, remove_document

STALE_GONE = "suggestion no longer found in document"
STALE_PARTIAL = "part of the suggestion's markup was edited away"


def _decide_markup(room: Room, suggestion: Suggestion, *, accept: bool) -> None:
    """Accept or reject the suggestion's own marks, only if they are still exactly what was proposed.

    Each hunk's recorded old and new text is compared with the markup first: if a person typed inside
    it, accepting would delete their words with the proposed ones, so the suggestion is stale instead
    and nothing changes. Only marks carrying this suggestion's id are touched; a comment or another
    suggestion that merely touches them stays.
    """
    ytext = room.doc.get(CONTENTS, type=Text)
    raw = str(ytext)
    changes = own_changes(raw, suggestion.uid)
    if not changes:
        raise StaleSuggestion(STALE_GONE)
    if len(changes) < len(suggestion.hunks):
        raise StaleSuggestion(STALE_PARTIAL)
    mismatch = markup_mismatch(raw, suggestion)
    if mismatch is not None:
        raise StaleSuggestion(mismatch)
    spans: list[Span] = []
    for change in changes:
        spans += accept_edits(raw, change) if accept else reject_edits(raw, change)
    deciding_here(room.store, room.doc_id, suggestion.uid)
    with room.transact():
        current = raw
        for span in sorted(spans, key=lambda s: s.start, reverse=True):
            text_delete(ytext, current=current, start=span.start, end=span.end)
            current = current[: span.start] + current[span.end :]


@dataclass
class Decision:
    suggestion: Suggestion
    ok: bool
    reason: str = ""
    detail: str = ""


def _record(suggestion: Suggestion, *, status: str, user: Any, note: str) -> None:
    with transaction.atomic():
        suggestion.status = status
        suggestion.decided_at = timezone.now()
        suggestion.decided_by = user if getattr(user, "pk", None) else None
        suggestion.note = note
        suggestion.save(update_fields=["status", "decided_at", "decided_by", "note"])
        if suggestion.decided_by is not None:
            LogEntry.objects.log_actions(
                user_id=user.pk,
                queryset=[suggestion],
                action_flag=CHANGE,
                change_message=f"{status.capitalize()} the suggestion" + (f": {note}" if note else ""),
                single_object=True,
            )


async def suggestion_decide(
    *, store: DocStore, suggestion: Suggestion, user: Any, accept: bool, note: str = ""
) -> Decision:
    """Accept or reject one pending suggestion in the live document; a stale one is marked and refused."""
    if not suggestion.is_pending:
        return Decision(suggestion, False, f"suggestion is already {suggestion.status}")
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(suggestion.doc_id)
    status = Suggestion.Status.ACCEPTED if accept else Suggestion.Status.REJECTED
    detail = ""
    try:
        if entry is None:
            raise StaleSuggestion("the document no longer exists")
        if suggestion.kind in (Suggestion.Kind.EDIT, Suggestion.Kind.CREATE):
            room = await store.get(suggestion.doc_id)
            if room is None:
                raise StaleSuggestion("the document no longer exists")
            _decide_markup(room, suggestion, accept=accept)
            await room.flushed()
            if suggestion.kind == Suggestion.Kind.CREATE and not accept:
                await remove_document(store, entry)
        elif suggestion.kind == Suggestion.Kind.MOVE and accept:
            links = await move_document(store, entry, suggestion.new_path)
            detail = f"{links} links rewritten"
        elif suggestion.kind == Suggestion.Kind.DELETE and accept:
            await remove_document(store, entry)
    except StaleSuggestion as exc:
        # Nobody decided a stale suggestion: the reviewer who tried is not recorded as its decider.
        await store.db(_record, suggestion, status=Suggestion.Status.STALE, user=None, note=suggestion.note)
        return Decision(suggestion, False, str(exc))
    except SuggestionError as exc:
        return Decision(suggestion, False, str(exc))
    await store.db(_record, suggestion, status=status, user=user, note=note)
    return Decision(suggestion, True, detail=detail)


async def suggestion_bulk_decide(
    *, store: DocStore, suggestions: Sequence[Suggestion], user: Any, accept: bool, note: str = ""
) -> list[Decision]:
    return [
        await suggestion_decide(store=store, suggestion=s, user=user, accept=accept, note=note)
        for s in suggestions
    ]


# -- sync entry points for the admin -------------------------------------------------------------------


def _run_on_store(coro_factory: Any) -> Any:
    """Run store work from sync code: on the server's event loop when called from a request thread."""

    async def run() -> Any:
        async with store_session() as store:
            return await coro_factory(store)

    return async_to_sync(run)()


def suggestion_accept(*, suggestion: Suggestion, user: Any, note: str = "") -> Decision:
    return _run_on_store(
        lambda store: suggestion_decide(store=store, suggestion=suggestion, user=user, accept=True, note=note)
    )


def suggestion_reject(*, suggestion: Suggestion, user: Any, note: str = "") -> Decision:
    return _run_on_store(
        lambda store: suggestion_decide(
            store=store, suggestion=suggestion, user=user, accept=False, note=note
        )
    )


def suggestion_bulk(
    *, suggestions: Sequence[Suggestion], user: Any, accept: bool, note: str = ""
) -> list[Decision]:
    return _run_on_store(
        lambda store: suggestion_bulk_decide(
            store=store, suggestions=suggestions, user=user, accept=accept, note=note
        )
    )
