"""A task's state read from its suggestion's row: every way a row leaves pending, and back."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from mcp_tools.models import McpTask
from mcp_tools.tasks.outcome import WITHDRAWN_NOTE, task_state
from suggestions.models import Suggestion

NOW = timezone.now()


def task(**fields: object) -> McpTask:
    return McpTask(
        id="t" * 43, token_id=1, tool="edit", suggestion_uid="abc", created_at=NOW, updated_at=NOW, **fields
    )


def row(status: str, **fields: object) -> Suggestion:
    base: dict[str, object] = {
        "uid": "abc",
        "kind": "edit",
        "path": "Lens/Leaf.md",
        "hunks": [{"old": "sugar", "new": "glucose"}, {"old": "light", "new": "sun"}],
        "status": status,
    }
    return Suggestion(**{**base, **fields})


def test_every_waiting_state_is_working() -> None:
    for status in ("pending", "accepting", "rejecting", "undoing", "reverting"):
        state = task_state(task=task(), row=row(status))
        assert state.status == "working" and state.decided is None, status
        assert "abc (edit of Lens/Leaf.md)" in state.message


def test_an_accepted_edit_gives_its_text_as_the_reviewer_left_it() -> None:
    reviewer = User(username="rita")
    later = NOW + timedelta(seconds=5)
    state = task_state(
        task=task(), row=row("accepted", decided_by=reviewer, decided_at=later, revision=["fructose", "sun"])
    )
    assert state.status == "completed" and state.updated_at == later
    assert state.decided is not None
    assert state.decided.reviewer == "rita" and state.decided.accepted_with_changes
    assert state.decided.final_text == ["fructose", "sun"]
    assert state.decided.changes == [
        {"proposed": "glucose", "accepted": "fructose", "difference": state.decided.changes[0]["difference"]}
    ]
    assert "with changes" in state.message


def test_decided_in_an_editor_superseded_stale_and_rolled_back_all_complete() -> None:
    editor = task_state(task=task(), row=row("rejected"))
    assert editor.status == "completed" and editor.decided is not None
    assert editor.decided.reviewer is None and editor.decided.final_text == ["sugar", "light"]
    assert "in an editor" in editor.message
    later = Suggestion(uid="def")
    superseded = task_state(task=task(), row=row("superseded", superseded_by=later))
    assert superseded.decided is not None and "suggestion def" in superseded.decided.note
    for status in ("stale", "reverted"):
        state = task_state(task=task(), row=row(status))
        assert state.status == "completed" and state.decided is not None
        assert state.decided.decision == status and state.decided.final_text == []


def test_a_created_file_gives_its_content_and_a_move_none() -> None:
    created = task_state(task=task(), row=row("accepted", kind="create", hunks=[], new_text="{}\n"))
    assert created.decided is not None and created.decided.final_text == ["{}\n"]
    moved = task_state(task=task(), row=row("accepted", kind="move", hunks=[]))
    assert moved.decided is not None and moved.decided.final_text == []
    rejected_move = task_state(task=task(), row=row("rejected", kind="move", hunks=[]))
    assert rejected_move.decided is not None and rejected_move.decided.final_text == []


def test_withdrawn_only_while_the_withdrawal_stands() -> None:
    cancelled = task(cancelled_at=NOW)
    assert task_state(task=cancelled, row=row("rejected", note=WITHDRAWN_NOTE)).status == "cancelled"
    # undone since: pending again, so working
    assert task_state(task=cancelled, row=row("pending")).status == "working"
    # then a person decided: their decision, not the withdrawal
    person = task_state(task=cancelled, row=row("rejected", note="No.", decided_by=User(username="rita")))
    assert person.status == "completed"
    # a rejection with the same words but no cancellation asked is not a withdrawal
    assert task_state(task=task(), row=row("rejected", note=WITHDRAWN_NOTE)).status == "completed"


def test_a_purged_suggestion_cancels_the_task_saying_why() -> None:
    state = task_state(task=task(), row=None)
    assert state.status == "cancelled" and state.decided is None
    assert "purged" in state.message and "abc" in state.message
