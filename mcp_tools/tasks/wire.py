"""A task as the Tasks extension's wire shows it: the `Task` fields, and the `DetailedTask` that `tasks/get`
answers and a `notifications/tasks` carries (the two are the same, word for word, at the same moment)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mcp_tools.models import McpTask
from mcp_tools.tasks.outcome import Decided, TaskState

# A person decides in minutes, not milliseconds: polling faster only costs queries (a decision is seen by
# the next poll whatever its interval; bench/run_tasks.py measures the rest). A client listening for the
# task's notifications hears it at once.
POLL_INTERVAL_MS = 2000
# Shown in full in `structuredContent`; the text keeps each passage to this many characters.
TEXT_PASSAGE_CHARS = 2000
# The notification pushing a task's state (to a `subscriptions/listen` stream that named the task).
TASK_NOTIFICATION = "notifications/tasks"


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_fields(task: McpTask, state: TaskState) -> dict[str, Any]:
    return {
        "taskId": task.id,
        "status": state.status,
        "statusMessage": state.message,
        "createdAt": timestamp(task.created_at),
        "lastUpdatedAt": timestamp(state.updated_at),
        # Kept while its token lives: a suggestion may wait days for its reviewer.
        "ttlMs": None,
        "pollIntervalMs": POLL_INTERVAL_MS,
    }


def _clip(text: str) -> str:
    return text if len(text) <= TEXT_PASSAGE_CHARS else text[:TEXT_PASSAGE_CHARS] + "…"


def decision_result(task: McpTask, state: TaskState, decided: Decided) -> dict[str, Any]:
    """A completed task's `result`: a `tools/call` result telling what became of the suggestion."""
    lines = [state.message]
    if decided.note:
        lines.append(f"Reviewer's note: {decided.note}")
    if decided.final_text:
        lines.append("Final text (what each changed passage reads now):")
        lines += [_clip(passage) for passage in decided.final_text]
    if task.answer:
        lines.append(f"Your {task.tool} call's answer was: {task.answer}")
    structured = {
        "suggestion": decided.suggestion,
        "path": decided.path,
        "kind": decided.kind,
        "decision": decided.decision,
        "reviewer": decided.reviewer,
        "note": decided.note,
        "acceptedWithChanges": decided.accepted_with_changes,
        "finalText": decided.final_text,
        "changes": decided.changes,
        "decidedAt": timestamp(decided.decided_at) if decided.decided_at else None,
    }
    return {
        "content": [{"type": "text", "text": "\n".join(lines)}],
        "structuredContent": structured,
        "isError": False,
    }


def detailed_task(task: McpTask, state: TaskState) -> dict[str, Any]:
    """The task as `tasks/get` answers it (the SEP's DetailedTask)."""
    body = task_fields(task, state)
    if state.decided is not None:
        body["result"] = decision_result(task, state, state.decided)
    return body


def task_notification(task: McpTask, state: TaskState) -> dict[str, Any]:
    """`notifications/tasks`: the task's whole state, as `tasks/get` would answer it now."""
    return {"jsonrpc": "2.0", "method": TASK_NOTIFICATION, "params": detailed_task(task, state)}
