"""Task rows: made when a write tool's call is answered with a task, found only by the token that made it,
withdrawn on request.

A task is its own token's alone. Another token's task, one in a folder the token no longer sees and one that
never existed are the same to the caller: `task_find` returns None for each, and the transport answers all
three with one error, word for word.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Subquery
from django.utils import timezone

from lensrelay.access.auth import Access
from lensrelay.docstore.store import DocStore
from mcp_tools.models import McpTask
from mcp_tools.tasks.outcome import WITHDRAWN_NOTE, TaskState, task_state
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.models import Suggestion
from suggestions.signals import suggestion_decided

logger = logging.getLogger(__name__)

# 32 bytes from the OS's generator: the SEP lets ids act as bearer handles, so none may be guessable.
TASK_ID_BYTES = 32
# Longer ids are not ours: refused before any query.
MAX_TASK_ID_CHARS = 64
_TASK_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_TASK_ID_CHARS}}}")


def task_create(*, token_id: int, tool: str, suggestion_uid: str, answer: str) -> McpTask:
    """Record the task for the suggestion a call proposed; committed when this returns, so a `tasks/get`
    for its id resolves on any worker before the client is told of it (as the SEP requires)."""
    folder_id = Suggestion.objects.filter(uid=suggestion_uid).values_list("folder_id", flat=True).first()
    return McpTask.objects.create(
        id=secrets.token_urlsafe(TASK_ID_BYTES),
        token_id=token_id,
        folder_id=folder_id,
        tool=tool,
        suggestion_uid=suggestion_uid,
        answer=answer,
    )


def task_find(*, task_id: str, access: Access) -> McpTask | None:
    """The task if this caller may see it: made by its token, in a folder it still sees. None otherwise."""
    # Ids are `token_urlsafe`: anything else names no task, and never reaches the database (PostgreSQL
    # refuses a NUL in a text parameter with an error rather than finding nothing).
    if access.token_id is None or not isinstance(task_id, str) or not _TASK_ID.fullmatch(task_id):
        return None
    task = McpTask.objects.filter(pk=task_id, token_id=access.token_id).first()
    if task is None or not access.sees_folder(task.folder_id):
        return None
    return task


def task_suggestion(*, task: McpTask) -> Suggestion | None:
    return (
        Suggestion.objects.select_related("decided_by", "superseded_by")
        .filter(uid=task.suggestion_uid)
        .first()
    )


def task_read(*, task: McpTask) -> TaskState:
    """The task's state now, read from its suggestion's row."""
    return task_state(task=task, row=task_suggestion(task=task))


def tasks_touch(*, suggestion_pks: list[int]) -> int:
    """The suggestions' decisions (or undos) changed their tasks: `lastUpdatedAt` moves. One query."""
    uids = Suggestion.objects.filter(pk__in=suggestion_pks).values("uid")
    return McpTask.objects.filter(suggestion_uid__in=Subquery(uids)).update(updated_at=timezone.now())


def _decided(sender: Any, *, pks: Sequence[int], **kwargs: Any) -> None:
    """Receiver, inside the transaction recording a decision or an undo: its tasks were updated. A failure
    here is logged and never undoes the decision (a savepoint keeps it from spoiling the transaction)."""
    try:
        with transaction.atomic():
            tasks_touch(suggestion_pks=list(pks))
    except Exception:
        logger.exception("could not touch the tasks of suggestions %s", list(pks))


def connect_task_signals() -> None:
    suggestion_decided.connect(_decided, dispatch_uid="mcp_tools.tasks.decided")


def _cancel_intent(task: McpTask) -> Suggestion | None:
    """The pending suggestion to withdraw, once the task's asking is recorded (None: nothing pending)."""
    row = Suggestion.objects.filter(uid=task.suggestion_uid, status=Suggestion.Status.PENDING).first()
    if row is not None:
        McpTask.objects.filter(pk=task.pk).update(cancelled_at=timezone.now())
    return row


async def task_withdraw(*, store: DocStore, task: McpTask) -> bool:
    """Withdraw the task's suggestion if it is still pending: rejected through the one claim (its markup
    removed surgically, its session told), decided by nobody, with the withdrawal's note. False when there
    was nothing to withdraw (already decided, being decided, gone) or a person's decision won the race: the
    task then ends as that decision says (cancellation is cooperative in the SEP)."""
    row = await store.db(_cancel_intent, task)
    if row is None:
        return False
    decision = await suggestion_decide(
        store=store, suggestion=row, user=None, accept=False, note=WITHDRAWN_NOTE
    )
    return decision.ok
