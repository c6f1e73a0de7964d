"""Tasks (the `io.modelcontextprotocol/tasks` extension) through the real surface: the official MCP SDK client
in protocol 2026-07-28 declares the extension (tests/e2e/tasks_client.py); its `edit` answers with a task; a
reviewer decides over the admin's HTTP endpoints (session, CSRF) and `tasks/get` follows: accepted →
completed, undone → working again, rejected → completed with the new state, and a `subscriptions/listen`
stream naming the task hears each of them (`notifications/tasks`). A task the SDK resolves itself
(`Client.call_tool`) returns the decision. `tasks/cancel` withdraws the suggestion from the live text. A
client that does not declare the extension gets today's answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from .browser import PASSWORD, call, mcp_client
from .relay import Relay
from .tasks_client import cancel_task, edit_as_task, get_task, listen_tasks, tasks_client, wait_task
from .test_undo_http import Staff

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

FOLDER = "Tasks"
NOTE = "# Plan 🦊\n\nThe quick brown fox jumps over the lazy dog.\nRivers run to the sea, 中文 too.\n"
_MARKER = "E2E-TASKS "
_SETUP = """
from django.contrib.auth.models import Permission, User
review = Permission.objects.filter(codename__in=["view_suggestion", "review_suggestion"])
User.objects.create_user("rita", password={password!r}, is_staff=True).user_permissions.set(review)
print({marker!r} + "ok")
"""
_ROWS = """
import json
from suggestions.models import Suggestion
rows = [
    {{"uid": s.uid, "pk": s.pk, "status": s.status, "note": s.note}}
    for s in Suggestion.objects.filter(path={path!r}).order_by("pk")
]
print({marker!r} + json.dumps(rows))
"""


@pytest.fixture(scope="module")
def world(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    vault: Path = tmp_path_factory.mktemp("tasks-vault")
    for name in ("Decided", "Resolved", "Cancelled", "Plain", "Heard"):
        (vault / f"{name}.md").write_text(NOTE, encoding="utf-8")
    relay.import_vault(vault, folder=FOLDER)
    out = relay.manage("shell", "-c", _SETUP.format(password=PASSWORD, marker=_MARKER))
    assert _MARKER + "ok" in out
    paths = asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))
    return {"doc_ids": {name: paths[f"{FOLDER}/{name}.md"] for name in ("Decided", "Resolved", "Cancelled")}}


def rows(relay: Relay, path: str) -> list[dict[str, Any]]:
    out = relay.manage("shell", "-c", _ROWS.format(path=path, marker=_MARKER))
    line = next(line for line in out.splitlines() if line.startswith(_MARKER))
    return json.loads(line[len(_MARKER) :])  # type: ignore[no-any-return]


async def test_an_edit_task_completes_on_accept_works_again_on_undo_and_completes_on_reject(
    relay: Relay, world: dict[str, Any]
) -> None:
    path = f"{FOLDER}/Decided.md"
    rita = await Staff.sign_in(relay.http_url, "rita")
    async with tasks_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        created = await edit_as_task(assistant, path, "quick brown", "slow red")
        assert created.status == "working" and created.ttl_ms is None
        assert (created.status_message or "").startswith(f"Edited {path}")
        assert (await get_task(assistant, created.task_id)).status == "working"
        [row] = await asyncio.to_thread(rows, relay, path)
        assert row["status"] == "pending"

        decided = await rita.post(
            f"/admin/suggestions/suggestion/{row['pk']}/decide/", {"decision": "accept", "note": "Livelier."}
        )
        assert decided.status_code == 302
        accepted = await wait_task(assistant, created.task_id)
        assert accepted.status == "completed" and accepted.result is not None
        data = accepted.result["structuredContent"]
        assert (data["decision"], data["reviewer"], data["note"]) == ("accepted", "rita", "Livelier.")
        assert data["finalText"] == ["slow red"] and data["acceptedWithChanges"] is False
        assert "was accepted by rita" in accepted.result["content"][0]["text"]

        status, body = await rita.undo(row["uid"])
        assert (status, body["ok"]) == (200, True), body
        again = await wait_task(assistant, created.task_id, until=("working",))
        assert again.result is None and again.last_updated_at >= accepted.last_updated_at

        decided = await rita.post(
            f"/admin/suggestions/suggestion/{row['pk']}/decide/", {"decision": "reject", "note": "Keep it."}
        )
        assert decided.status_code == 302
        rejected = await wait_task(assistant, created.task_id)
        assert rejected.status == "completed" and rejected.result is not None
        data = rejected.result["structuredContent"]
        assert (data["decision"], data["reviewer"], data["note"]) == ("rejected", "rita", "Keep it.")
    assert await relay.doc_text(world["doc_ids"]["Decided"], token=relay.tokens["edit"]) == NOTE


async def test_the_sdk_resolves_a_task_itself_once_a_person_decides(
    relay: Relay, world: dict[str, Any]
) -> None:
    path = f"{FOLDER}/Resolved.md"
    rita = await Staff.sign_in(relay.http_url, "rita")
    async with tasks_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        await assistant.call_tool("read", {"file_path": path})
        arguments = {"file_path": path, "old_string": "lazy dog", "new_string": "sleepy cat"}
        waiting = asyncio.create_task(assistant.call_tool("edit", arguments))
        for _ in range(200):  # the row appears when the call has answered with its task
            found = await asyncio.to_thread(rows, relay, path)
            if found:
                break
            await asyncio.sleep(0.05)
        [row] = found
        assert not waiting.done()  # Client.call_tool is still polling: nobody decided
        decided = await rita.post(
            f"/admin/suggestions/suggestion/{row['pk']}/decide/", {"decision": "reject"}
        )
        assert decided.status_code == 302
        result = await asyncio.wait_for(waiting, timeout=30)
    assert result.is_error is False
    assert result.structured_content is not None and result.structured_content["decision"] == "rejected"
    assert f"Suggestion {row['uid']} (edit of {path}) was rejected by rita." in result.content[0].text  # type: ignore[union-attr]


async def test_cancel_withdraws_the_suggestion_from_the_live_text(
    relay: Relay, world: dict[str, Any]
) -> None:
    path = f"{FOLDER}/Cancelled.md"
    doc_id = world["doc_ids"]["Cancelled"]
    async with tasks_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        created = await edit_as_task(assistant, path, "Rivers run", "Streams flow")
        assert "Streams flow" in await relay.doc_text(doc_id, token=relay.tokens["edit"])
        await cancel_task(assistant, created.task_id)
        ended = await wait_task(assistant, created.task_id)
    assert ended.status == "cancelled" and "Withdrawn at your request" in (ended.status_message or "")
    [row] = await asyncio.to_thread(rows, relay, path)
    assert row["status"] == "rejected" and row["note"].startswith("Withdrawn")
    assert await relay.doc_text(doc_id, token=relay.tokens["edit"]) == NOTE


async def test_another_tokens_task_is_not_found_and_clients_without_the_extension_get_todays_answer(
    relay: Relay, world: dict[str, Any]
) -> None:
    from mcp.shared.exceptions import MCPError

    path = f"{FOLDER}/Plain.md"
    async with tasks_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        created = await edit_as_task(assistant, path, "the sea", "the ocean")
    async with tasks_client(relay.http_url, relay.tokens["edit"]) as other:
        for attempt in (get_task(other, created.task_id), cancel_task(other, created.task_id)):
            with pytest.raises(MCPError) as refused:
                await attempt
            assert (refused.value.code, refused.value.message) == (
                -32602,
                "Failed to retrieve task: Task not found",
            )
    # the handshake era's client (and any client not declaring the extension) is answered as before
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as plain:
        await call(plain, "read", {"file_path": path})
        answer = await call(plain, "edit", {"file_path": path, "old_string": "fox", "new_string": "hare"})
    assert answer.startswith(f"Edited {path}")


async def test_a_listen_stream_hears_its_tasks_decisions_and_only_its_tokens(
    relay: Relay, world: dict[str, Any]
) -> None:
    path = f"{FOLDER}/Heard.md"
    rita = await Staff.sign_in(relay.http_url, "rita")
    async with tasks_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        created = await edit_as_task(assistant, path, "brown fox", "grey wolf")
    async with tasks_client(relay.http_url, relay.tokens["edit"]) as other:
        theirs = await edit_as_task(other, path, "Rivers", "Brooks")
    wanted = [created.task_id, theirs.task_id, "no-such-task"]
    async with listen_tasks(relay.http_url, relay.tokens["suggest"], wanted, request_id=41) as listener:
        # Another token's task and an unknown id are left out alike.
        assert listener.acknowledged["notifications"] == {"taskIds": [created.task_id]}
        assert listener.acknowledged["_meta"]["io.modelcontextprotocol/subscriptionId"] == 41
        row, _theirs = await asyncio.to_thread(rows, relay, path)  # by pk: this token's came first
        decided_at = asyncio.get_running_loop().time()
        reply = await rita.post(
            f"/admin/suggestions/suggestion/{row['pk']}/decide/", {"decision": "accept", "note": "Wild."}
        )
        assert reply.status_code == 302
        heard = await listener.next()
        latency = asyncio.get_running_loop().time() - decided_at
        assert heard["method"] == "notifications/tasks"
        params = heard["params"]
        assert params["_meta"]["io.modelcontextprotocol/subscriptionId"] == 41
        assert params["taskId"] == created.task_id and params["status"] == "completed"
        assert params["result"]["structuredContent"]["note"] == "Wild."
        assert latency < 5, latency

        status, body = await rita.undo(row["uid"])
        assert (status, body["ok"]) == (200, True), body
        assert (await listener.next())["params"]["status"] == "working"
