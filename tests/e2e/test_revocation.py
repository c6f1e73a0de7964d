"""Revoking or narrowing a token cuts off its open clients: a real y-websocket client and an MCP session
of the official `mcp` SDK, against a running daphne server.

The token changes in another process (`manage.py shell` calling the token services, as the admin does),
so the server learns of it only through the database, the way every worker does. Each socket must close
within a second of the change's commit: 4401 when the token is revoked, 4403 on a folder it lost. The
MCP session's next request is refused (401 revoked; 404 session ended when narrowed), and a new session
sees only what the token still may.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from .conftest import YClientFactory
from .relay import Relay, TokenSpec, poll
from .yclient import YClient

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

CUT_OFF_SECONDS = 1.0
OPEN_TEXT = "# Open\n\nAnyone in Public reads this.\n"
HIDDEN_TEXT = "# Hidden\n\nThe vault code is 4711.\n"
TOKENS = {
    "revoked": TokenSpec("edit", ("Public", "Secret")),
    "narrowed": TokenSpec("edit", ("Public", "Secret")),
}
_MARKER = "E2E-TOKEN-CHANGED "
_CHANGE_SCRIPT = """
import time
from lensrelay.models import ApiToken, Folder
from lensrelay.access.tokens import token_revoke, token_set_folders
token = ApiToken.objects.get(token_hash=ApiToken.hash_token({raw!r}))
keep = {keep!r}
if keep is None:
    token_revoke(token=token)
else:
    token_set_folders(token=token, folders=Folder.objects.filter(name__in=keep))
print({marker!r} + repr(time.time()))
"""


@pytest.fixture(scope="module")
def world(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Relay, dict[str, str]]]:
    root = tmp_path_factory.mktemp("revocation-vaults")
    for folder, name, text in (("Public", "Open.md", OPEN_TEXT), ("Secret", "Hidden.md", HIDDEN_TEXT)):
        (root / folder).mkdir()
        (root / folder / name).write_text(text)
    tokens = relay.setup(imports=[(root / "Public", "Public"), (root / "Secret", "Secret")], tokens=TOKENS)
    yield relay, tokens


async def change_token(manage: Callable[..., str], raw: str, *, keep: list[str] | None) -> float:
    """Revoke (keep=None) or narrow the token to `keep` in another process (`manage` runs manage.py
    against the server's database); returns the time of the commit."""
    script = _CHANGE_SCRIPT.format(raw=raw, keep=keep, marker=_MARKER)
    out = await asyncio.to_thread(manage, "shell", "-c", script)
    line = next(line for line in out.splitlines() if line.startswith(_MARKER))
    return float(line[len(_MARKER) :])


async def closed_at(client: YClient) -> tuple[dict[str, Any], float]:
    event = await client.wait_event("closed", timeout=30)
    return event, time.time()


def watch_closing(*clients: YClient) -> list[asyncio.Task[tuple[dict[str, Any], float]]]:
    """Start watching before the change, so each close is timed when it arrives."""
    return [asyncio.create_task(closed_at(client)) for client in clients]


async def expect_closed(
    watchers: list[asyncio.Task[tuple[dict[str, Any], float]]], *, code: int, committed: float
) -> None:
    """Every watched client closed with `code` within CUT_OFF_SECONDS of the change's commit."""
    for watcher in watchers:
        event, when = await watcher
        assert event["code"] == code, event
        assert when - committed <= CUT_OFF_SECONDS, f"closed {when - committed:.2f} s after the change"


@asynccontextmanager
async def mcp_session(http_url: str, token: str) -> AsyncIterator[tuple[Client, list[str]]]:
    """An SDK client in a session (legacy mode), and the session ids the server issued to it."""
    issued: list[str] = []

    async def remember_session(response: httpx2.Response) -> None:
        if session_id := response.headers.get("Mcp-Session-Id"):
            issued.append(session_id)

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
        event_hooks={"response": [remember_session]},
    )
    async with http:
        transport = streamable_http_client(f"{http_url}/mcp", http_client=http)
        async with Client(transport, mode="legacy") as client:
            yield client, issued


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def raw_mcp_post(http_url: str, token: str, session_id: str) -> httpx.Response:
    """What the server answers the old session now, without the SDK's interpretation."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Mcp-Session-Id": session_id,
        "MCP-Protocol-Version": "2025-11-25",
    }
    body = {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(f"{http_url}/mcp", headers=headers, content=json.dumps(body))


async def open_clients(
    relay: Relay, raw: str, yclients: YClientFactory
) -> tuple[dict[str, str], YClient, YClient]:
    docs = {
        "public": await relay.doc_id(raw, folder="Public", path="/Open.md"),
        "secret": await relay.doc_id(raw, folder="Secret", path="/Hidden.md"),
    }
    public = await yclients(relay.doc_url(docs["public"]), docs["public"], params={"token": raw}, label="pub")
    secret = await yclients(relay.doc_url(docs["secret"]), docs["secret"], params={"token": raw}, label="sec")
    assert await secret.text() == HIDDEN_TEXT
    return docs, public, secret


async def test_revoking_cuts_off_the_sync_socket_and_the_mcp_session(
    world: tuple[Relay, dict[str, str]], yclients: YClientFactory
) -> None:
    relay, tokens = world
    raw = tokens["revoked"]
    docs, public, secret = await open_clients(relay, raw, yclients)
    async with mcp_session(relay.http_url, raw) as (client, issued):
        session_id = issued[0]
        assert "4711" in text_of(await client.call_tool("read", {"file_path": "Secret/Hidden.md"}))

        watchers = watch_closing(public, secret)
        committed = await change_token(relay.manage, raw, keep=None)
        await expect_closed(watchers, code=4401, committed=committed)
        with pytest.raises(MCPError, match="Unauthorized: the bearer token is unknown, expired or revoked"):
            await client.call_tool("read", {"file_path": "Secret/Hidden.md"})
    answer = await raw_mcp_post(relay.http_url, raw, session_id)
    assert answer.status_code == 401, answer.text
    # nothing the cut-off client still sends reaches the server
    await public.insert(0, "LATE ")
    await asyncio.sleep(0.5)
    assert await relay.doc_text(docs["public"], token=relay.tokens["admin"]) == OPEN_TEXT


async def test_narrowing_closes_the_lost_folder_and_ends_the_mcp_session(
    world: tuple[Relay, dict[str, str]], yclients: YClientFactory
) -> None:
    relay, tokens = world
    raw = tokens["narrowed"]
    docs, public, secret = await open_clients(relay, raw, yclients)
    async with mcp_session(relay.http_url, raw) as (client, issued):
        session_id = issued[0]
        assert "4711" in text_of(await client.call_tool("read", {"file_path": "Secret/Hidden.md"}))

        watchers = watch_closing(secret)
        committed = await change_token(relay.manage, raw, keep=["Public"])
        await expect_closed(watchers, code=4403, committed=committed)
        with pytest.raises(MCPError, match="Session not found"):
            await client.call_tool("read", {"file_path": "Secret/Hidden.md"})
    answer = await raw_mcp_post(relay.http_url, raw, session_id)
    assert answer.status_code == 404, answer.text

    # the socket on the folder it kept stays open and still writes
    assert public.events_named("closed") == []
    await public.insert(0, "Still here. ")
    await poll(
        lambda: relay.doc_text(docs["public"], token=relay.tokens["admin"]),
        lambda text: text == "Still here. " + OPEN_TEXT,
        what="the kept folder's edit",
    )
    # a new session sees Public only
    async with mcp_session(relay.http_url, raw) as (client, _):
        hidden = await client.call_tool("read", {"file_path": "Secret/Hidden.md"})
        assert hidden.is_error and "4711" not in text_of(hidden)
        assert "Still here." in text_of(await client.call_tool("read", {"file_path": "Public/Open.md"}))
        listed = text_of(await client.call_tool("glob", {"pattern": "**/*.md"}))
        assert listed.splitlines() == ["Public/Open.md"]
