"""`notifications/tasks` for the listen streams that named a task: each decision, undo and purge is logged
once per watching session, as `tasks/get` answers at that moment; other sessions, ended streams and
other tasks hear nothing, and a failure to tell never undoes the decision."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone

from lensrelay.vault.purge import documents_erase
from mcp_tools.models import McpSession, McpTask, McpTaskWatch
from mcp_tools.notifications import events
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.undoing import suggestions_undo_decided
from tests.mcp_tools.notifications.logged import logged_params
from tests.mcp_tools.tasks_support import Assistant, edit_as_task, row_of, suggesting
from tests.mcp_tools.test_transport_support import TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)

METHOD = "notifications/tasks"


@sync_to_async
def watching(task_id: str, name: str) -> str:
    """A listen stream's session (as `subscriptions/listen` opens one) that named the task."""
    now = timezone.now()
    McpSession.objects.create(id=name, protocol_version="2026-07-28", created_at=now, last_seen_at=now)
    events.stream_claim(session_id=name)
    McpTaskWatch.objects.create(session_id=name, task_id=task_id)
    return name


@sync_to_async
def told(session_id: str) -> list[dict[str, Any]]:
    return logged_params(session_id, METHOD)


async def task_of(assistant: Assistant, old: str = "sugar", new: str = "glucose") -> str:
    return str((await edit_as_task(assistant, old, new))["taskId"])


async def test_each_decision_and_undo_is_pushed_as_tasks_get_answers_it(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any, rita: User
) -> None:
    assistant = await suggesting(http, tokens)
    task_id = await task_of(assistant)
    other_task = await task_of(await suggesting(http, tokens), "water", "rain")
    session = await watching(task_id, "listen-a")
    elsewhere = await watching(other_task, "listen-b")
    assert await told(session) == []  # nothing until the task changes

    row = await row_of(task_id)
    assert (await suggestion_decide(store=store, suggestion=row, user=rita, accept=True, note="Yes.")).ok
    [accepted] = await told(session)
    polled = await assistant.get(task_id)
    assert accepted == {key: value for key, value in polled.items() if key not in ("resultType", "_meta")}
    assert accepted["status"] == "completed"
    assert accepted["result"]["structuredContent"]["reviewer"] == "rita"

    assert (await suggestions_undo_decided(store=store, suggestions=[await row_of(task_id)], user=rita)).ok
    row = await row_of(task_id)
    assert (await suggestion_decide(store=store, suggestion=row, user=rita, accept=False, note="No.")).ok
    statuses = [
        (params["status"], params.get("result", {}).get("structuredContent", {}).get("decision"))
        for params in await told(session)
    ]
    assert statuses == [("completed", "accepted"), ("working", None), ("completed", "rejected")]
    assert [p["lastUpdatedAt"] for p in await told(session)] == sorted(
        p["lastUpdatedAt"] for p in await told(session)
    )
    assert await told(elsewhere) == []  # another task's watcher


async def test_a_purge_pushes_cancelled_and_ends_the_watch(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    assistant = await suggesting(http, tokens)
    task_id = await task_of(assistant)
    session = await watching(task_id, "listen-purge")
    await sync_to_async(documents_erase)(doc_ids=[leaf.doc_id])
    [cancelled] = await told(session)
    assert cancelled["taskId"] == task_id and cancelled["status"] == "cancelled" and "result" not in cancelled
    assert "purged" in cancelled["statusMessage"]
    assert cancelled["statusMessage"] == (await assistant.get(task_id))["statusMessage"]
    assert not await McpTaskWatch.objects.filter(task_id=task_id).aexists()
    assert await McpTask.objects.filter(pk=task_id).aexists()  # the task itself stays, for tasks/get


async def test_an_ended_stream_hears_nothing_and_a_failure_never_undoes_the_decision(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any, rita: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id = await task_of(await suggesting(http, tokens))
    ended = await watching(task_id, "listen-ended")
    await McpSession.objects.filter(pk=ended).aupdate(ended_at=timezone.now())
    broken = await watching(task_id, "listen-broken")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the event log is unwritable")

    monkeypatch.setattr("mcp_tools.notifications.task_status.events_append", refuse)
    row = await row_of(task_id)
    assert (await suggestion_decide(store=store, suggestion=row, user=rita, accept=True)).ok
    assert (await row_of(task_id)).status == "accepted"
    assert await told(ended) == [] and await told(broken) == []
