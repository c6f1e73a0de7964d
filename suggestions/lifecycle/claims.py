"""One decision per suggestion: a reviewer claims it in the database before the document changes.

The claim is a conditional update (`status = pending` in the WHERE), so of any number of reviewers in
any number of processes exactly one gets the row; the others are told who has it. The winner then
changes the document and settles the claim (accepted or rejected, with one admin history entry), marks
it stale when the markup is gone, or releases it back to pending when applying was refused. A claim
whose process died mid-decision can be taken over after `CLAIM_TIMEOUT`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from suggestions.markup.records import HunkRecord, UndoRecord
from suggestions.markup.revising import revision_summary
from suggestions.models import Suggestion
from suggestions.signals import suggestion_decided

CLAIM_TIMEOUT = timedelta(minutes=5)
Status = Suggestion.Status
CLAIMED = (Status.ACCEPTING, Status.REJECTING)


@dataclass(frozen=True)
class Claim:
    """A won claim: the row is ours while its status and `decided_at` are still these."""

    pk: int
    status: str
    at: datetime


def _reviewer(user: Any) -> Any:
    return user if getattr(user, "pk", None) else None


def claim_decision(*, pk: int, accept: bool, user: Any) -> Claim | Suggestion | None:
    """Claim the decision: a `Claim` if this caller won, else the row as it stands (None if deleted)."""
    now = timezone.now()
    status = Status.ACCEPTING if accept else Status.REJECTING
    open_for_claim = Q(status=Status.PENDING) | Q(status__in=CLAIMED, decided_at__lt=now - CLAIM_TIMEOUT)
    won = Suggestion.objects.filter(open_for_claim, pk=pk).update(
        status=status, decided_at=now, decided_by=_reviewer(user)
    )
    if won:
        return Claim(pk=pk, status=status, at=now)
    return Suggestion.objects.select_related("decided_by").filter(pk=pk).first()


def _ours(claim: Claim) -> Any:
    return Suggestion.objects.filter(pk=claim.pk, status=claim.status, decided_at=claim.at)


def settle_claim(
    *,
    claim: Claim,
    user: Any,
    note: str,
    undo: UndoRecord | None = None,
    batch: str = "",
    revision: Sequence[str] = (),
) -> Suggestion | None:
    """Record the decision and its one history entry; None if the claim was taken over meanwhile.
    ``undo`` is what undoing it needs (see suggestions/markup/undo_record.py); ``batch`` names a bulk
    decision; ``revision`` the inserted texts as the reviewer changed them before accepting."""
    final = Status.ACCEPTED if claim.status == Status.ACCEPTING else Status.REJECTED
    reviewer = _reviewer(user)
    with transaction.atomic():
        settled = _ours(claim).update(
            status=final,
            decided_at=timezone.now(),
            decided_by=reviewer,
            note=note,
            undo=undo or {},
            decision_batch=batch,
            revision=list(revision),
        )
        if not settled:
            return None
        row = Suggestion.objects.select_related("decided_by").get(pk=claim.pk)
        suggestion_decided.send(sender=Suggestion, pks=[claim.pk])
        if reviewer is not None:
            LogEntry.objects.log_actions(
                user_id=reviewer.pk,
                queryset=[row],
                action_flag=CHANGE,
                change_message=_decision_message(row, note=note),
                single_object=True,
            )
    return row


def _decision_message(row: Suggestion, *, note: str) -> str:
    """The history entry: the decision, what the reviewer changed before accepting, and the note."""
    message = f"{row.get_status_display()} the suggestion"
    if row.accepted_with_changes:
        message += f" with changes: {revision_summary(row.revised_hunks())}"
    return message + (f": {note}" if note else "")


def stale_claim(*, claim: Claim) -> None:
    """Nobody decided a stale suggestion: the reviewer who tried is not recorded as its decider."""
    with transaction.atomic():
        if _ours(claim).update(status=Status.STALE, decided_at=timezone.now(), decided_by=None):
            suggestion_decided.send(sender=Suggestion, pks=[claim.pk])


def release_claim(*, claim: Claim) -> None:
    """Applying was refused and nothing changed: the suggestion is pending again."""
    _ours(claim).update(status=Status.PENDING, decided_at=None, decided_by=None)


def already_decided(row: Suggestion | None) -> str:
    """Why a claim was lost, naming who decided: "suggestion is already accepted by rita"."""
    if row is None:
        return "suggestion no longer exists"
    status = row.status
    if status == Status.PENDING:
        return "another reviewer was deciding it just now; try again"
    by = f" by {row.decided_by.get_username()}" if row.decided_by else ""
    if status in CLAIMED:
        return f"suggestion is already being {'accepted' if status == Status.ACCEPTING else 'rejected'}{by}"
    if status == Status.UNDOING:
        return f"suggestion's decision is being undone{by}"
    if status in (Status.ACCEPTED, Status.REJECTED):
        return f"suggestion is already {status}{by or ' in an editor'}"
    return f"suggestion is already {status}"


# -- undoing a decision: the same one-winner rule --------------------------------------------------------

DECIDED = (Status.ACCEPTED, Status.REJECTED)


@dataclass(frozen=True)
class UndoClaim:
    """A won claim on undoing a decision, with the decision as it was, to put back if undo is refused."""

    pk: int
    at: datetime
    previous_status: str
    previous_at: datetime | None
    previous_by: int | None


def claim_undo(*, row: Suggestion, user: Any) -> UndoClaim | None:
    """Claim undoing the decision ``row`` shows (its status and time as read): None if it changed since,
    because someone else undid or decided it meanwhile."""
    now = timezone.now()
    won = Suggestion.objects.filter(
        pk=row.pk, status=row.status, status__in=DECIDED, decided_at=row.decided_at
    ).update(status=Status.UNDOING, decided_at=now, decided_by=_reviewer(user))
    if not won:
        return None
    return UndoClaim(row.pk, now, row.status, row.decided_at, row.decided_by_id)


def _undo_ours(claim: UndoClaim) -> Any:
    return Suggestion.objects.filter(pk=claim.pk, status=Status.UNDOING, decided_at=claim.at)


def release_undo(*, claim: UndoClaim) -> None:
    """Undo was refused and nothing changed: the decision stands as it was."""
    _undo_ours(claim).update(
        status=claim.previous_status, decided_at=claim.previous_at, decided_by_id=claim.previous_by
    )


def settle_undo(*, claim: UndoClaim, user: Any, hunks: list[HunkRecord]) -> bool:
    """The markup is back: the suggestion is pending again, and the history gains an entry beside the
    decision's own (which stays)."""
    undone = "acceptance" if claim.previous_status == Status.ACCEPTED else "rejection"
    reviewer = _reviewer(user)
    with transaction.atomic():
        reopened = _undo_ours(claim).update(
            status=Status.PENDING,
            decided_at=None,
            decided_by=None,
            note="",
            undo={},
            decision_batch="",
            hunks=hunks,
            revision=[],
        )
        if not reopened:
            return False
        message = f"Undid the {undone}: the suggestion is pending again"
        _announce(pk=claim.pk, reviewer=reviewer, message=message, undone=claim.previous_status)
    return True


# -- rolling an accepted change back: the same one-winner rule ---------------------------------------------


@dataclass(frozen=True)
class RevertClaim:
    """A won claim on rolling back an accepted change: the row is ours while it is `reverting` since
    `at`."""

    pk: int
    at: datetime


def claim_revert(*, pk: int, user: Any) -> RevertClaim | None:
    """Claim rolling back the accepted change ``pk``: None if it is not accepted any more (rolled back,
    undone or being so by someone else). A claim whose process died is taken over after CLAIM_TIMEOUT."""
    now = timezone.now()
    open_for_claim = Q(status=Status.ACCEPTED) | Q(
        status=Status.REVERTING, rolled_back_at__lt=now - CLAIM_TIMEOUT
    )
    won = Suggestion.objects.filter(open_for_claim, pk=pk).update(
        status=Status.REVERTING, rolled_back_at=now, rolled_back_by=_reviewer(user)
    )
    return RevertClaim(pk, now) if won else None


def _revert_ours(claim: RevertClaim) -> Any:
    return Suggestion.objects.filter(pk=claim.pk, status=Status.REVERTING, rolled_back_at=claim.at)


def release_revert(*, claim: RevertClaim) -> None:
    """Rolling back was refused and nothing changed: the change stands accepted, as it was."""
    _revert_ours(claim).update(status=Status.ACCEPTED, rolled_back_at=None, rolled_back_by=None)


def settle_revert(*, claim: RevertClaim, user: Any, message: str) -> bool:
    """The old text is back: the row says who rolled it back and when (its acceptance stays recorded in
    `decided_by`/`decided_at` and the history), and the history gains ``message``. The assistant hears of
    it as of a decision. False if the claim was taken over meanwhile."""
    reviewer = _reviewer(user)
    with transaction.atomic():
        settled = _revert_ours(claim).update(
            status=Status.REVERTED, rolled_back_at=timezone.now(), rolled_back_by=reviewer
        )
        if not settled:
            return False
        _announce(pk=claim.pk, reviewer=reviewer, message=message)
    return True


def _announce(*, pk: int, reviewer: Any, message: str, undone: str = "") -> None:
    """A settled row's news: the assistant hears of it as of a decision, the history gains ``message``.
    ``undone``: the decision an undo took back (the row no longer says)."""
    suggestion_decided.send(sender=Suggestion, pks=[pk], by=reviewer, undone=undone)
    if reviewer is not None:
        LogEntry.objects.log_actions(
            user_id=reviewer.pk,
            queryset=list(Suggestion.objects.filter(pk=pk)),
            action_flag=CHANGE,
            change_message=message,
            single_object=True,
        )
