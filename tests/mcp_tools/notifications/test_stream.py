"""GET /mcp end to end over ASGI: refusals, replay by Last-Event-ID, and notifications made by real changes
(subscribed edits, documents appearing, folder scope). Streams are given a short lifetime here
(LENSRELAY_MCP_STREAM_MAX_SECONDS) so a test can read a whole body."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from pycrdt import Text

from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create
from mcp_tools.models import McpStream, McpSubscription
from mcp_tools.notifications.events import events_append
from mcp_tools.resources.documents import document_uri
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)

SSE = "text/event-stream"


@pytest.fixture(autouse=True)
def _scoped_settings(settings: Any) -> None:
    # An override is active for the whole test, so what the tests below set on django.conf.settings
    # is undone with it at teardown.
    settings.LENSRELAY_MCP_STREAM_MAX_SECONDS = 0.3


async def listen(mcp: Mcp, session: str, *, last: str | None = None, seconds: float = 0.3) -> httpx.Response:
    extra = {"Mcp-Session-Id": session, "MCP-Protocol-Version": HANDSHAKE}
    if last is not None:
        extra["Last-Event-ID"] = last
    settings.LENSRELAY_MCP_STREAM_MAX_SECONDS = seconds
    return await mcp.http.get("/mcp", headers=mcp.headers(extra, accept=SSE))


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a stream (the priming event's empty data and comments skipped)."""
    messages = []
    for block in text.split("\n\n"):
        data = "\n".join(line[5:].strip() for line in block.split("\n") if line.startswith("data:"))
        if data:
            messages.append(json.loads(data))
    return messages


def ids(text: str) -> list[str]:
    return [line[4:] for line in text.splitlines() if line.startswith("id: ")]


def methods(text: str) -> list[str]:
    return [message.get("method", "") for message in parse_sse(text)]


async def test_refusals_say_what_is_wrong(mcp: Mcp) -> None:
    session = await mcp.initialize()
    no_sse = await mcp.http.get(
        "/mcp", headers=mcp.headers({"Mcp-Session-Id": session}, accept="application/json")
    )
    assert no_sse.status_code == 406
    missing = await mcp.http.get("/mcp", headers=mcp.headers(accept=SSE))
    assert missing.status_code == 400 and "Mcp-Session-Id" in missing.json()["error"]["message"]
    unknown = await mcp.http.get("/mcp", headers=mcp.headers({"Mcp-Session-Id": "nope"}, accept=SSE))
    assert unknown.status_code == 404
    bad = await mcp.http.get(
        "/mcp", headers=mcp.headers({"Mcp-Session-Id": session, "Last-Event-ID": "x1"}, accept=SSE)
    )
    assert bad.status_code == 400 and "Last-Event-ID" in bad.json()["error"]["message"]


async def test_another_tokens_session_is_not_found(mcp: Mcp, tokens: TokenFactory) -> None:
    session = await mcp.initialize()
    other = Mcp(mcp.http, await tokens("edit"))
    response = await other.http.get("/mcp", headers=other.headers({"Mcp-Session-Id": session}, accept=SSE))
    assert response.status_code == 404


async def test_last_event_id_replays_what_the_session_missed(mcp: Mcp) -> None:
    session = await mcp.initialize()
    first = await listen(mcp, session)
    assert ids(first.text) == ["0"]  # the priming event: resumable before the first notification
    for n in range(3):
        message = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": n},
        }
        await sync_to_async(events_append)(session_ids=[session], message=message)
    resumed = await listen(mcp, session, last="1")
    assert ids(resumed.text) == ["1", "2", "3"]  # priming at the cursor, then the two missed events
    assert [m["params"]["data"] for m in parse_sse(resumed.text)] == [1, 2]
    fresh = await listen(mcp, session)
    assert ids(fresh.text) == ["3"]  # without Last-Event-ID: from now on


@pytest.fixture
async def notes(store: Any, transactional_db: None) -> Any:
    team = await sync_to_async(folder_create)(name="Team")
    secret = await sync_to_async(folder_create)(name="Secret")
    await document_create(store=store, folder=team, path="/Plan.md", text="first\n")
    return store, team, secret


async def edit(store: Any, doc_id: str, text: str) -> None:
    room = await store.get(doc_id)
    with room.transact():
        room.doc.get("contents", type=Text).insert(0, text)
    await room.flushed()


async def test_a_subscribed_edit_and_a_new_note_are_notified_but_not_another_folders(
    notes: Any, http: httpx.AsyncClient, tokens: TokenFactory
) -> None:
    store, team, secret = notes
    mcp = Mcp(http, await tokens("edit", folders=(team,)))
    session = await mcp.initialize()
    uri = document_uri("Team/Plan.md")
    assert (await mcp.request("resources/subscribe", {"uri": uri}, session=session)).result == {}
    row = await McpSubscription.objects.aget(session_id=session)
    plan = row.doc_id
    assert plan

    async def changes() -> None:
        await asyncio.sleep(0.2)
        for n in range(5):  # typing: debounced into one event now and one after the window
            await edit(store, plan, f"{n}")
        await document_create(store=store, folder=secret, path="/Hidden.md", text="x")
        await document_create(store=store, folder=team, path="/New.md", text="y")

    response, _ = await asyncio.gather(listen(mcp, session, seconds=1.5), changes())
    messages = parse_sse(response.text)
    updated = [m["params"]["uri"] for m in messages if m.get("method") == "notifications/resources/updated"]
    assert updated and set(updated) == {uri}
    assert len(updated) <= 2
    assert methods(response.text).count("notifications/resources/list_changed") == 1  # Team's, not Secret's


async def test_a_resume_past_the_log_hears_the_resync_hints_before_any_replayed_event(
    notes: Any, http: httpx.AsyncClient, tokens: TokenFactory
) -> None:
    """README, "Notifications": told first that every list and subscribed resource changed, then the last
    LENSRELAY_MCP_EVENT_LOG_SIZE events. The hints must not merge into the replayed events they repeat
    (they would lose their place at the front)."""
    settings.LENSRELAY_MCP_EVENT_LOG_SIZE = 4
    _, team, _ = notes
    mcp = Mcp(http, await tokens("edit", folders=(team,)))
    session = await mcp.initialize()
    uri = document_uri("Team/Plan.md")
    assert (await mcp.request("resources/subscribe", {"uri": uri}, session=session)).result == {}
    assert ids((await listen(mcp, session)).text)[0] == "0"
    listed = {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}
    changed = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
    told = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "notice", "data": 40}}
    # 40 events: pruning has run (every 32), the last four are [updated, updated, list_changed, message].
    for message in [changed] * 38 + [listed, told]:
        await sync_to_async(events_append)(session_ids=[session], message=message)
    resumed = await listen(mcp, session, last="0")
    assert methods(resumed.text) == [
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/message",
    ]
    newest = (await McpStream.objects.aget(session_id=session)).last_seq  # 40, or 41 with Plan.md's listing
    # The priming event at the cursor; the hints carry no id.
    assert ids(resumed.text) == ["0", *(str(seq) for seq in range(newest - 2, newest + 1))]


async def test_a_resume_past_the_log_size_is_a_gap_before_pruning_runs(mcp: Mcp) -> None:
    settings.LENSRELAY_MCP_EVENT_LOG_SIZE = 4
    session = await mcp.initialize()
    await listen(mcp, session)
    for n in range(1, 8):  # fewer than PRUNE_EVERY: every row is still in the table
        params = {"level": "info", "data": n}
        message = {"jsonrpc": "2.0", "method": "notifications/message", "params": params}
        await sync_to_async(events_append)(session_ids=[session], message=message)
    resumed = await listen(mcp, session, last="1")
    assert methods(resumed.text)[0] == "notifications/resources/list_changed"
    assert ids(resumed.text) == ["1", "4", "5", "6", "7"]


async def test_subscribing_to_a_missing_or_invisible_note_is_resource_not_found(
    notes: Any, http: httpx.AsyncClient, tokens: TokenFactory
) -> None:
    store, team, secret = notes
    await document_create(store=store, folder=secret, path="/Hidden.md", text="x")
    mcp = Mcp(http, await tokens("edit", folders=(team,)))
    session = await mcp.initialize()
    for path in ("Team/Nothing.md", "Secret/Hidden.md"):
        reply = await mcp.request("resources/subscribe", {"uri": document_uri(path)}, session=session)
        assert reply.error["code"] == -32002
    assert not await McpSubscription.objects.filter(session_id=session).aexists()
    unsub = await mcp.request("resources/unsubscribe", {"uri": document_uri("Team/Plan.md")}, session=session)
    assert unsub.result == {}


async def test_idle_streams_carry_keep_alive_comments(mcp: Mcp) -> None:
    settings.LENSRELAY_MCP_STREAM_PING_SECONDS = 0.1
    session = await mcp.initialize()
    response = await listen(mcp, session, seconds=0.45)
    assert response.text.count(": ping\n\n") >= 2


async def test_a_newer_get_of_the_same_session_takes_over_from_the_older(mcp: Mcp) -> None:
    settings.LENSRELAY_MCP_EVENTS_POLL_SECONDS = 0.1
    session = await mcp.initialize()
    headers = mcp.headers({"Mcp-Session-Id": session}, accept=SSE)

    async def older() -> float:
        started = time.monotonic()
        await mcp.http.get("/mcp", headers=headers)
        return time.monotonic() - started

    async def newer() -> httpx.Response:
        await asyncio.sleep(0.3)
        return await mcp.http.get("/mcp", headers=headers)

    settings.LENSRELAY_MCP_STREAM_MAX_SECONDS = 4.0
    lasted, _ = await asyncio.gather(older(), newer())
    assert lasted < 2.0  # ended when the newer stream took over, not by the 4 s limit
