"""The Tasks extension on the wire (2026-07-28): a write tool asked by a client that declared
`io.modelcontextprotocol/tasks` answers with a task; `tasks/get` follows the suggestion's row through a
person's decisions, an undo and a purge; `tasks/cancel` withdraws; another token's task is exactly a missing
one; clients that did not declare the extension, and the handshake era, get today's answers."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from pycrdt import Text

from lensrelay.access.tokens import token_set_folders, token_update
from lensrelay.models import ApiToken
from mcp_tools.models import McpSession, McpTask, McpTaskWatch
from mcp_tools.transport.tasking import EXTENSION, NOT_FOUND
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.purging import suggestions_forget
from suggestions.lifecycle.undoing import suggestions_undo_decided
from suggestions.models import Suggestion
from tests.mcp_tools.tasks_support import TASKS, TEXT, Assistant, edit_as_task, row_of, suggesting
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)


async def test_discover_advertises_the_extension_and_initialize_does_not(mcp: Mcp) -> None:
    discovered = (await mcp.modern("server/discover")).result
    assert discovered["capabilities"]["extensions"] == {EXTENSION: {}}
    client_info = {"name": "c", "version": "1"}
    params = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": client_info}
    reply = await mcp.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    capabilities = reply.result["capabilities"]
    # neither the extension (2026-07-28 only) nor 2025-11-25's experimental `tasks`
    assert "extensions" not in capabilities and "tasks" not in capabilities


async def test_an_edit_task_completes_on_accept_then_works_again_on_undo_and_completes_on_reject(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any, rita: User
) -> None:
    assistant = await suggesting(http, tokens)
    created = await edit_as_task(assistant)
    assert created["resultType"] == "task" and created["status"] == "working"
    assert "content" not in created and "isError" not in created
    assert created["ttlMs"] is None and created["pollIntervalMs"] > 0
    assert created["statusMessage"].startswith("Edited Lens/Leaf.md")  # the tool's own answer first
    task_id = created["taskId"]
    assert len(task_id) >= 40
    polled = await assistant.get(task_id)
    assert polled["resultType"] == "complete" and polled["status"] == "working" and "result" not in polled
    assert polled["createdAt"] == created["createdAt"]

    row = await row_of(task_id)
    assert row.status == "pending" and row.tool == "edit"
    decision = await suggestion_decide(
        store=store, suggestion=row, user=rita, accept=True, note="Nicer word."
    )
    assert decision.ok
    accepted = await assistant.get(task_id)
    assert accepted["status"] == "completed"
    assert accepted["lastUpdatedAt"] >= polled["lastUpdatedAt"]
    data = accepted["result"]["structuredContent"]
    assert data["suggestion"] == row.uid and data["path"] == "Lens/Leaf.md" and data["kind"] == "edit"
    assert (data["decision"], data["reviewer"], data["note"]) == ("accepted", "rita", "Nicer word.")
    assert data["acceptedWithChanges"] is False and data["finalText"] == ["glucose"]
    text = accepted["result"]["content"][0]["text"]
    assert f"Suggestion {row.uid} (edit of Lens/Leaf.md) was accepted by rita." in text
    assert "Reviewer's note: Nicer word." in text and accepted["result"]["isError"] is False

    undone = await suggestions_undo_decided(store=store, suggestions=[row], user=rita)
    assert undone.ok, undone.message
    again = await assistant.get(task_id)
    assert again["status"] == "working" and "result" not in again
    assert again["lastUpdatedAt"] >= accepted["lastUpdatedAt"]

    row = await row_of(task_id)
    decision = await suggestion_decide(store=store, suggestion=row, user=rita, accept=False, note="Keep it.")
    assert decision.ok
    rejected = await assistant.get(task_id)
    assert rejected["status"] == "completed"
    data = rejected["result"]["structuredContent"]
    assert (data["decision"], data["note"], data["finalText"]) == ("rejected", "Keep it.", ["sugar"])


async def test_accepted_with_changes_says_what_the_reviewer_changed(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any, rita: User
) -> None:
    assistant = await suggesting(http, tokens)
    task_id = (await edit_as_task(assistant))["taskId"]
    row = await row_of(task_id)
    decision = await suggestion_decide(
        store=store, suggestion=row, user=rita, accept=True, revision=["fructose"]
    )
    assert decision.ok, decision.reason
    data = (await assistant.get(task_id))["result"]["structuredContent"]
    assert data["acceptedWithChanges"] is True and data["finalText"] == ["fructose"]
    assert data["changes"][0]["proposed"] == "glucose" and data["changes"][0]["accepted"] == "fructose"


async def test_the_notes_purge_ends_the_task_saying_so(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    assistant = await suggesting(http, tokens)
    task_id = (await edit_as_task(assistant))["taskId"]
    await sync_to_async(suggestions_forget)(doc_ids=[leaf.doc_id])
    ended = await assistant.get(task_id)
    assert ended["status"] == "cancelled" and "result" not in ended
    assert "purged" in ended["statusMessage"]


async def test_cancel_withdraws_the_pending_suggestion(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    assistant = await suggesting(http, tokens)
    task_id = (await edit_as_task(assistant))["taskId"]
    reply = await assistant.task("tasks/cancel", task_id)
    assert reply.status == 200 and reply.result == {"resultType": "complete", "_meta": reply.result["_meta"]}
    row = await row_of(task_id)
    assert row.status == "rejected" and row.decided_by_id is None and row.note.startswith("Withdrawn")
    room = await store.get(leaf.doc_id)
    assert str(room.doc.get("contents", type=Text)) == TEXT  # its markup gone, the text as before
    cancelled = await assistant.get(task_id)
    assert cancelled["status"] == "cancelled" and "Withdrawn at your request" in cancelled["statusMessage"]
    # cancelling again: acknowledged, nothing more happens
    assert (await assistant.task("tasks/cancel", task_id)).status == 200
    assert (await assistant.get(task_id))["status"] == "cancelled"


async def test_cancel_after_a_persons_decision_leaves_the_decision(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any, rita: User
) -> None:
    assistant = await suggesting(http, tokens)
    task_id = (await edit_as_task(assistant))["taskId"]
    assert (await suggestion_decide(store=store, suggestion=await row_of(task_id), user=rita, accept=True)).ok
    assert (await assistant.task("tasks/cancel", task_id)).status == 200
    task = await assistant.get(task_id)
    assert task["status"] == "completed" and task["result"]["structuredContent"]["decision"] == "accepted"


async def test_each_write_tool_answers_with_a_task(
    store: Any, http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    assistant = await suggesting(http, tokens)
    await assistant.call("read", {"file_path": "Lens/Leaf.md"})
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "multi_edit",
            {"file_path": "Lens/Leaf.md", "edits": [{"old_string": "light", "new_string": "sun"}]},
        ),
        ("write", {"file_path": "Lens/New.md", "content": "A new note.\n"}),
        ("move", {"file_path": "Lens/Leaf.md", "new_path": "Lens/Old/Leaf.md"}),
        ("delete", {"file_path": "Lens/Leaf.md"}),
    ]
    for name, arguments in calls:
        created = await assistant.call(name, arguments)
        assert created.get("resultType") == "task", (name, created)
        task = await McpTask.objects.aget(pk=created["taskId"])
        assert task.tool == name
        assert (await assistant.get(created["taskId"]))["status"] == "working"


async def test_clients_that_do_not_declare_get_todays_answer(
    http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    assistant = Assistant(Mcp(http, await tokens("suggest")), declares=False)
    answer = await edit_as_task(assistant)
    assert answer["resultType"] == "complete" and answer["isError"] is False
    assert answer["content"][0]["text"].startswith("Edited Lens/Leaf.md")
    assert await McpTask.objects.acount() == 0
    # the extension's methods need it declared (-32021), found or not
    for method in ("tasks/get", "tasks/cancel"):
        reply = await assistant.task(method, "whatever")
        assert reply.status == 400 and reply.error["code"] == -32021
        assert reply.error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


async def test_the_handshake_era_has_no_tasks_and_ignores_a_legacy_task_param(
    mcp: Mcp, http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    client = Mcp(http, await tokens("suggest"))
    session = await client.initialize(HANDSHAKE)
    await client.request(
        "tools/call", {"name": "read", "arguments": {"file_path": "Lens/Leaf.md"}}, session=session
    )
    reply = await client.request(
        "tools/call",
        {
            "name": "edit",
            "arguments": {"file_path": "Lens/Leaf.md", "old_string": "sugar", "new_string": "glucose"},
            "task": {"ttl": 60000},
        },
        session=session,
    )
    assert reply.result["isError"] is False and "task" not in reply.result
    assert reply.text().startswith("Edited Lens/Leaf.md")
    missing = await client.request("tasks/get", {"taskId": "x"}, session=session)
    assert missing.error["code"] == -32601
    assert await McpTask.objects.acount() == 0


async def test_read_tools_and_failed_or_dry_calls_answer_as_today(
    http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    assistant = await suggesting(http, tokens)
    read = await assistant.call("read", {"file_path": "Lens/Leaf.md"})
    assert read["resultType"] == "complete" and "Plants make sugar" in read["content"][0]["text"]
    refused = await assistant.call(
        "edit", {"file_path": "Lens/Leaf.md", "old_string": "absent words", "new_string": "x"}
    )
    assert refused["resultType"] == "complete" and refused["isError"] is True
    dry = await assistant.call(
        "multi_edit",
        {"file_path": "Lens/Leaf.md", "edits": [{"old_string": "sugar", "new_string": "x"}], "dry_run": True},
    )
    assert dry["resultType"] == "complete" and dry["content"][0]["text"].startswith("Dry run")
    # a legacy `task` param is ignored in this era too (the SEP: it is no opt-in)
    legacy = await assistant.mcp.modern(
        "tools/call",
        {"name": "read", "arguments": {"file_path": "Lens/Leaf.md"}, "task": {"ttl": 1}},
        meta=TASKS,
    )
    assert legacy.status == 200 and legacy.result["resultType"] == "complete"
    assert await McpTask.objects.acount() == 0


# ------------------------------------------------------------------------------------------- attacks


async def test_another_tokens_task_is_exactly_a_missing_one(
    http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    owner = await suggesting(http, tokens)
    task_id = (await edit_as_task(owner))["taskId"]
    thief = await suggesting(http, tokens, name="other")
    for method in ("tasks/get", "tasks/cancel", "tasks/update"):
        extra: dict[str, Any] = {"inputResponses": {}} if method == "tasks/update" else {}
        stolen = await thief.task(method, task_id, **extra)
        missing = await thief.task(method, task_id[:-1] + ("A" if task_id[-1] != "A" else "B"), **extra)
        assert stolen.status == missing.status == 400, method
        assert stolen.error == missing.error, method
        assert stolen.error == {"code": -32602, "message": NOT_FOUND}
    # the thief's cancel withdrew nothing
    assert (await row_of(task_id)).status == "pending"
    assert (await owner.get(task_id))["status"] == "working"
    assert (await owner.task("tasks/update", task_id, inputResponses={"k": {}})).status == 200


async def test_a_token_narrowed_away_from_the_folder_no_longer_sees_its_task(
    http: Any, tokens: TokenFactory, leaf: Any, make_folder: Any
) -> None:
    assistant = await suggesting(http, tokens, name="narrowed")
    task_id = (await edit_as_task(assistant))["taskId"]
    other = await sync_to_async(make_folder)("Elsewhere")
    token = await ApiToken.objects.aget(name="narrowed")
    await sync_to_async(token_set_folders)(token=token, folders=[other])
    reply = await assistant.task("tasks/get", task_id)
    assert reply.status == 400 and reply.error == {"code": -32602, "message": NOT_FOUND}


@pytest.mark.parametrize(
    "task_id",
    ["", 123, None, ["a"], {"id": "x"}, "x" * 10_000, "../../etc/passwd", "' OR 1=1 --", "\u0000", "🌱" * 20],
)
async def test_forged_and_malformed_task_ids_are_refused(
    http: Any, tokens: TokenFactory, leaf: Any, task_id: Any
) -> None:
    assistant = await suggesting(http, tokens)
    await edit_as_task(assistant)  # a real task exists; none of these names it
    for method in ("tasks/get", "tasks/cancel"):
        reply = await assistant.task(method, task_id)
        assert reply.status == 400, (method, task_id, reply.response.text)
        assert reply.error["code"] in (-32602, -32020), reply.error  # header mismatch for a non-string id
    assert (await Suggestion.objects.aget()).status == "pending"


async def test_missing_params_and_a_wrong_routing_header_are_refused(
    http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    assistant = await suggesting(http, tokens)
    task_id = (await edit_as_task(assistant))["taskId"]
    no_params = await assistant.mcp.modern("tasks/get", {}, meta=TASKS)
    assert no_params.status == 400 and no_params.error["code"] == -32602
    wrong_header = await assistant.mcp.modern(
        "tasks/get", {"taskId": task_id}, meta=TASKS, headers={"Mcp-Name": "another"}
    )
    assert wrong_header.status == 400 and wrong_header.error["code"] == -32020
    no_responses = await assistant.task("tasks/update", task_id)
    assert no_responses.status == 400 and no_responses.error["code"] == -32602


async def test_a_view_token_gets_no_task_and_cannot_withdraw(
    http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    viewer = Assistant(Mcp(http, await tokens("view")))
    refused = await edit_as_task(viewer)
    assert refused["resultType"] == "complete" and refused["isError"] is True
    assert await McpTask.objects.acount() == 0
    # a task whose token has since been made view-only: still its own to read, not to withdraw with
    assistant = await suggesting(http, tokens, name="demoted")
    task_id = (await edit_as_task(assistant))["taskId"]
    token = await ApiToken.objects.aget(name="demoted")
    await sync_to_async(token_update)(token=token, name=token.name, role="view", expires_at=None)
    assert (await assistant.get(task_id))["status"] == "working"
    reply = await assistant.task("tasks/cancel", task_id)
    assert reply.status == 400 and reply.error["code"] == -32600 and "role view" in reply.error["message"]
    assert (await row_of(task_id)).status == "pending"


async def test_listening_to_tasks_needs_the_extension_and_a_list_of_ids(
    http: Any, tokens: TokenFactory, leaf: Any
) -> None:
    assistant = await suggesting(http, tokens)
    task_id = (await edit_as_task(assistant))["taskId"]
    plain = Assistant(assistant.mcp, declares=False)
    wrong: list[tuple[Assistant, Any, int]] = [
        (plain, [task_id], -32021),  # the SEP: a client that did not declare it is told, not ignored
        (assistant, task_id, -32602),
        (assistant, [task_id, 7], -32602),
        (assistant, [task_id] * 201, -32602),  # past LENSRELAY_MCP_MAX_SUBSCRIPTIONS
    ]
    for who, ids, code in wrong:
        reply = await who.mcp.modern(
            "subscriptions/listen", {"notifications": {"taskIds": ids}}, meta=who.meta
        )
        assert reply.error["code"] == code, (ids, reply.text)
        if code == -32021:
            assert reply.error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    # Nothing was opened for any of them: no listen session, no watch.
    assert not await McpSession.objects.filter(id__startswith="listen-").aexists()
    assert not await McpTaskWatch.objects.aexists()
