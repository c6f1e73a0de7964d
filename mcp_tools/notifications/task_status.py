"""`notifications/tasks`: a task's new state pushed to the `subscriptions/listen` streams that named it.

A task's state is read from its suggestion's row (mcp_tools/tasks/outcome.py), so what changes it is what
changes that row: a decision or an undo (`suggestions.signals.suggestion_decided`, inside the transaction
that records it, on whatever worker), and a purge of the note, which deletes the row
(`lensrelay.docstore.tombstones.documents_purged`). Each is logged for every watching session in the same
transaction, once, with the task as `tasks/get` would answer it at that moment; the streams of this process
are woken at commit, others' find it on their next poll. A purged task can change no more: its watches go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db.models import Exists, OuterRef, Subquery

from mcp_tools.models import McpTask, McpTaskWatch
from mcp_tools.notifications.events import events_append
from mcp_tools.notifications.guard import after_commit_wake, failures_contained
from mcp_tools.tasks.outcome import TaskState, task_state
from mcp_tools.tasks.records import task_read
from mcp_tools.tasks.wire import task_notification


def _tell(watches: Iterable[McpTaskWatch], *, state: Callable[[McpTask], TaskState]) -> int:
    """Log each watched task's state for its watching sessions; returns how many events were made."""
    by_task: dict[str, tuple[McpTask, list[str]]] = {}
    for watch in watches:
        by_task.setdefault(watch.task_id, (watch.task, []))[1].append(watch.session_id)
    made = 0
    for task, session_ids in by_task.values():
        made += len(events_append(session_ids=session_ids, message=task_notification(task, state(task))))
    return made


def _now(task: McpTask) -> TaskState:
    return task_read(task=task)


def _purged(task: McpTask) -> TaskState:
    return task_state(task=task, row=None)


def _live(watches: Any) -> Any:
    return watches.filter(session__ended_at__isnull=True).select_related("task").order_by("pk")


def task_decided(sender: Any, *, pks: Sequence[int], **kwargs: Any) -> None:
    """Receiver: suggestions were decided or undone; their tasks' watchers hear the new state."""
    from suggestions.models import Suggestion

    with failures_contained("task notifications for suggestions %s", list(pks)):
        uids = Suggestion.objects.filter(pk__in=list(pks)).values("uid")
        watches = McpTaskWatch.objects.filter(task__suggestion_uid__in=Subquery(uids))
        if _tell(_live(watches), state=_now):
            after_commit_wake()


def task_purged(sender: Any, *, doc_ids: Sequence[str], **kwargs: Any) -> None:
    """Receiver: notes were purged. Whether their suggestions' rows are deleted before or after this runs,
    a watched task whose suggestion is in those notes, or is gone, is told it is cancelled, and unwatched."""
    from suggestions.models import Suggestion

    with failures_contained("task notifications for purged documents %s", list(doc_ids)):
        suggestion = Suggestion.objects.filter(uid=OuterRef("task__suggestion_uid"))
        gone = ~Exists(suggestion) | Exists(suggestion.filter(doc_id__in=list(doc_ids)))
        watches = McpTaskWatch.objects.filter(gone)
        made = _tell(_live(watches), state=_purged)
        watches.delete()
        if made:
            after_commit_wake()


def connect_task_status_signals() -> None:
    from lensrelay.docstore.tombstones import documents_purged
    from suggestions.signals import suggestion_decided

    suggestion_decided.connect(task_decided, dispatch_uid="mcp_tools.notifications.tasks")
    documents_purged.connect(task_purged, dispatch_uid="mcp_tools.notifications.tasks_purged")
