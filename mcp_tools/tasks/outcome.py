"""What a task is, read from its suggestion's row at the moment it is asked: nothing is kept in step.

Pending (or being decided, undone, rolled back): `working`. Decided by anyone, however (a reviewer, an
editor removing the markup, a clean-up, a later edit superseding it, a version restore): `completed`, with
the decision, the reviewer, their note, the text the decision left and whether it was accepted with changes.
An undo makes the row pending again, so the task is `working` again; the next decision completes it anew.
Withdrawn through `tasks/cancel`: `cancelled`. The row gone (its note purged): `cancelled`, saying so, since
no person will ever decide it (`failed` is reserved for JSON-RPC errors).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from mcp_tools.models import McpTask
from suggestions.markup.revising import revision_changes, revision_summary
from suggestions.models import Suggestion

Status = Suggestion.Status
TaskStatus = Literal["working", "completed", "cancelled"]

# The note a withdrawal leaves on the suggestion (its proposing session hears it, as of any decision).
WITHDRAWN_NOTE = "Withdrawn by the assistant that proposed it: it cancelled its task."
# Rows in these states wait for a person, or are in the middle of one's decision, undo or rollback.
WAITING: dict[str, str] = {
    Status.PENDING: "Waiting for a person to decide",
    Status.ACCEPTING: "A person is accepting",
    Status.REJECTING: "A person is rejecting",
    Status.UNDOING: "A person is undoing the decision on",
    Status.REVERTING: "A person is rolling back",
}


@dataclass(frozen=True)
class Decided:
    """What became of a decided suggestion, as the task's result tells it."""

    suggestion: str
    path: str
    kind: str
    decision: str  # the row's status: accepted, rejected, superseded, stale, reverted
    reviewer: str | None  # None: decided in an editor, by a clean-up or a later edit
    note: str
    accepted_with_changes: bool
    # What each changed passage reads after the decision: the accepted text (as the reviewer left it), the
    # original text of a rejected edit; empty where the decision left no text of the suggestion's.
    final_text: list[str]
    changes: list[dict[str, str]]
    decided_at: datetime | None


@dataclass(frozen=True)
class TaskState:
    status: TaskStatus
    message: str
    decided: Decided | None  # set when completed
    updated_at: datetime


def final_text(row: Suggestion) -> list[str]:
    if row.status == Status.ACCEPTED:
        inserted = list(row.revision) or row.proposed_insertions()
        # A created file or a replaced one carries its content whole, without hunks.
        return inserted or ([row.new_text] if row.new_text else [])
    if row.status == Status.REJECTED and row.kind == Suggestion.Kind.EDIT:
        return [hunk.get("old", "") for hunk in row.hunks or []]
    return []


def decision_note(row: Suggestion) -> str:
    """The row's note; a superseded row has none of its own, so say what happened."""
    if row.note or row.status != Status.SUPERSEDED:
        return row.note
    by = row.superseded_by.uid if row.superseded_by is not None else ""
    later = f"suggestion {by}, " if by else ""
    return f"Superseded by {later}a later edit of the same text that carries this suggestion's text forward."


def decided_of(row: Suggestion) -> Decided:
    return Decided(
        suggestion=row.uid,
        path=row.path,
        kind=row.kind,
        decision=row.status,
        reviewer=row.decided_by.get_username() if row.decided_by is not None else None,
        note=decision_note(row),
        accepted_with_changes=row.accepted_with_changes,
        final_text=final_text(row),
        changes=revision_changes(row.proposed_insertions(), row.revision) if row.revision else [],
        decided_at=row.decided_at,
    )


def withdrawn(task: McpTask, row: Suggestion) -> bool:
    """Rejected by the task's own cancellation and by nobody since (an undo, a person's decision count)."""
    return (
        task.cancelled_at is not None
        and row.status == Status.REJECTED
        and row.decided_by_id is None
        and row.note == WITHDRAWN_NOTE
    )


def decision_sentence(decided: Decided) -> str:
    """One line for the assistant: what became of its suggestion and who decided."""
    what = f"Suggestion {decided.suggestion} ({decided.kind} of {decided.path}) was {decided.decision}"
    if decided.decision in (Status.ACCEPTED, Status.REJECTED):
        what += (
            f" by {decided.reviewer}" if decided.reviewer else " in an editor (its markup was edited away)"
        )
    if decided.accepted_with_changes:
        pairs = [(c["proposed"], c["accepted"]) for c in decided.changes]
        what += f", with changes: {revision_summary(pairs, limit=600)}"
    return what + "."


def task_state(*, task: McpTask, row: Suggestion | None) -> TaskState:
    """The task now, from its suggestion's row (None: the row is gone)."""
    if row is None:
        return TaskState(
            "cancelled",
            f"No decision will come: suggestion {task.suggestion_uid} no longer exists (its note was purged, "
            "deleted for good, and its suggestions with it).",
            None,
            task.updated_at,
        )
    updated = max(task.updated_at, row.decided_at or task.updated_at)
    waiting = WAITING.get(row.status)
    if waiting is not None:
        message = f"{waiting} suggestion {row.uid} ({row.kind} of {row.path})."
        return TaskState("working", message, None, updated)
    if withdrawn(task, row):
        message = (
            f"Withdrawn at your request: suggestion {row.uid} ({row.kind} of {row.path}) was rejected "
            "before anyone decided it; nothing of it is left in the note."
        )
        return TaskState("cancelled", message, None, updated)
    decided = decided_of(row)
    return TaskState("completed", decision_sentence(decided), decided, updated)
