"""Task rows: made for the suggestion a call proposed, found only by their own token in folders it sees,
touched by every decision and undo, withdrawn through the one claim."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from lensrelay.access.auth import Access
from lensrelay.access.tokens import token_create
from lensrelay.vault.documents import document_create
from mcp_tools.models import McpTask
from mcp_tools.tasks.records import MAX_TASK_ID_CHARS, task_create, task_find, task_read, task_withdraw
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.undoing import suggestions_undo_decided
from suggestions.models import Suggestion
from tests.suggestions.test_admin import propose

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def proposed(store: Any, make_folder: Any) -> tuple[Suggestion, Any]:
    folder = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=folder, path="/Leaf.md", text="Plants make sugar.\n")
    return await propose(store, note, ("sugar", "glucose")), folder


def owner(token_id: int, folder_ids: frozenset[int] | None = None, role: str = "suggest") -> Access:
    return Access(name="claude", role=role, folder_ids=folder_ids, token_id=token_id)


async def new_task(suggestion: Suggestion) -> McpTask:
    token, _ = await sync_to_async(token_create)(name="claude", role="suggest")
    return await sync_to_async(task_create)(
        token_id=token.pk, tool="edit", suggestion_uid=suggestion.uid, answer="Edited Lens/Leaf.md."
    )


async def test_a_task_is_found_by_its_own_token_in_its_folders_only(proposed: Any, make_folder: Any) -> None:
    suggestion, folder = proposed
    task = await new_task(suggestion)
    assert task.folder_id == folder.pk and len(task.id) >= 43
    find = sync_to_async(task_find)
    assert (await find(task_id=task.id, access=owner(task.token_id))) == task
    assert await find(task_id=task.id, access=owner(task.token_id, frozenset({folder.pk}))) == task
    assert await find(task_id=task.id, access=owner(task.token_id + 1)) is None
    assert await find(task_id=task.id, access=owner(task.token_id, frozenset({folder.pk + 1}))) is None
    anonymous = Access(name="anonymous", role="edit", folder_ids=None, token_id=None)
    assert await find(task_id=task.id, access=anonymous) is None
    assert await find(task_id="x" * (MAX_TASK_ID_CHARS + 1), access=owner(task.token_id)) is None


async def test_decisions_and_undos_move_last_updated(store: Any, proposed: Any) -> None:
    suggestion, _ = proposed
    task = await new_task(suggestion)
    rita = await sync_to_async(User.objects.create_superuser)("rita", "r@example.org", "pw")
    assert (await suggestion_decide(store=store, suggestion=suggestion, user=rita, accept=True)).ok
    decided = await sync_to_async(task_read)(task=await McpTask.objects.aget(pk=task.pk))
    assert decided.status == "completed" and decided.updated_at > task.updated_at
    assert (await suggestions_undo_decided(store=store, suggestions=[suggestion], user=rita)).ok
    touched = await McpTask.objects.aget(pk=task.pk)
    undone = await sync_to_async(task_read)(task=touched)
    assert undone.status == "working" and undone.updated_at >= decided.updated_at > task.updated_at


async def test_withdrawing_rejects_once_and_leaves_a_persons_decision(store: Any, proposed: Any) -> None:
    suggestion, _ = proposed
    task = await new_task(suggestion)
    assert await task_withdraw(store=store, task=task) is True
    row = await Suggestion.objects.aget(pk=suggestion.pk)
    assert row.status == "rejected" and row.decided_by_id is None
    assert (await sync_to_async(task_read)(task=await McpTask.objects.aget(pk=task.pk))).status == "cancelled"
    assert await task_withdraw(store=store, task=task) is False  # nothing pending any more
    # undone by a reviewer: working again; accepted: the person's decision stands, not the withdrawal
    rita = await sync_to_async(User.objects.create_superuser)("rita", "r@example.org", "pw")
    assert (await suggestions_undo_decided(store=store, suggestions=[row], user=rita)).ok
    reopened = await McpTask.objects.aget(pk=task.pk)
    assert (await sync_to_async(task_read)(task=reopened)).status == "working"
    row = await Suggestion.objects.aget(pk=suggestion.pk)
    assert (await suggestion_decide(store=store, suggestion=row, user=rita, accept=True)).ok
    assert (await sync_to_async(task_read)(task=reopened)).status == "completed"
