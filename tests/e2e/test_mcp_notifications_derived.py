"""`notifications/resources/updated` from the derive process the launcher starts beside the server
(LENSRELAY_DERIVED_WORK=process, the default deployment), to the official `mcp` SDK client, for edits of
npm y-websocket clients:

- an edit is told within BOUND seconds (docs/scale.md: the derive poll, one pass, the events poll);
- a burst of edits read by one pass is one notification, and a free-running burst far fewer than its edits;
- with the derive process killed the edits go on, nothing is told by the server, and the launcher's new
  derive process tells what came meanwhile (it resumes from its cursor);
- a session whose token no longer sees the note's folder, or was revoked, is told nothing (while a session
  beside it is), and a note it cannot see cannot be subscribed to.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client

from .notify_clients import TIMEOUT, Heard, RawSession, sdk_client
from .relay import Relay, TokenSpec, poll
from .test_derive_process import alive, derive_children

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

BOUND = 2.0  # seconds from an edit to its notification (docs/scale.md, "Freshness")
BURST = 20
RESTART_SECONDS = 3.0
RELAY_ENV = {
    "LENSRELAY_DERIVED_WORK": "process",
    "LENSRELAY_DERIVE_RESTART_SECONDS": str(RESTART_SECONDS),
    "LENSRELAY_MCP_EVENTS_POLL_SECONDS": "0.2",
}
_MARK = "E2E-NOTIFY "
_NARROW_SCRIPT = """
from lensrelay.models import ApiToken, Folder
token = ApiToken.objects.get(token_hash=ApiToken.hash_token({raw!r}))
token.folders.set(Folder.objects.filter(name={folder!r}))
print("done")
"""
_TOLD_SCRIPT = """
import json
from mcp_tools.models import McpEvent
told = {{}}
for session in {sessions!r}:
    messages = McpEvent.objects.filter(session_id=session).values_list("message", flat=True)
    told[session] = [m["params"]["uri"] for m in messages if m["method"] == "notifications/resources/updated"]
print({mark!r} + json.dumps(told))
"""


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("derived-notify")
    for name in ("Watched", "Burst", "Paused", "Down", "Guarded"):
        (root / f"{name}.md").write_text(f"The {name.lower()} note.\n")
    other = tmp_path_factory.mktemp("derived-other")
    (other / "Elsewhere.md").write_text("Not for the narrow token.\n")
    return relay.setup(
        imports=[(root, "Notify"), (other, "Other")],
        tokens={
            "watcher": TokenSpec("suggest", ("Notify",)),
            "to-narrow": TokenSpec("suggest", ("Notify",)),
            "to-revoke": TokenSpec("suggest", ("Notify",)),
        },
    )


def connect(relay: Relay, token: str, heard: Heard | None = None) -> AbstractAsyncContextManager[Client]:
    return sdk_client(relay.http_url, token, heard)


def updated(heard: Heard) -> list[str]:
    return [str(n.params.uri) for n in heard.of(types.ResourceUpdatedNotification)]


async def the_derive_process(relay: Relay) -> int:
    server_pid = relay.server.pid
    assert server_pid is not None
    (pid,) = await poll(
        lambda: asyncio.to_thread(derive_children, server_pid),
        lambda pids: len(pids) == 1,
        timeout=RESTART_SECONDS + 15,
        what="one derive process beside the server",
    )
    return int(pid)


async def editors(relay: Relay, yclients: Any, doc_id: str) -> tuple[Any, Any]:
    params = {"token": relay.tokens["edit"]}
    writer = await yclients(relay.doc_url(doc_id), doc_id, params=params, label="writer")
    reader = await yclients(relay.doc_url(doc_id), doc_id, params=params, label="reader")
    return writer, reader


@asynccontextmanager
async def watching(
    relay: Relay, yclients: Any, token: str, heard: Heard, name: str
) -> AsyncIterator[tuple[str, Any, Any]]:
    """An SDK client subscribed to Notify/`name`.md, and a y-websocket writer and reader of that note:
    (its URI, the writer, the reader)."""
    doc_id = await relay.doc_id(token, folder="Notify", path=f"/{name}.md")
    async with connect(relay, token, heard) as client:
        uri = f"lens://Notify/{name}.md"
        await client.subscribe_resource(uri)
        writer, reader = await editors(relay, yclients, doc_id)
        yield uri, writer, reader


async def test_an_edit_is_told_by_the_derive_process_within_the_bound(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    await the_derive_process(relay)
    await relay.aderived()  # the notes' import told before the subscription, not after (seen once in CI)
    heard = Heard()
    async with watching(relay, yclients, vault["watcher"], heard, "Watched") as (uri, writer, _):
        started = time.monotonic()
        await writer.insert(0, "Edited. ")
        await heard.wait(lambda: updated(heard), "resources/updated", seconds=BOUND + 5)
        elapsed = time.monotonic() - started
        assert elapsed < BOUND, f"told after {elapsed:.2f} s"
        await asyncio.sleep(1.0)
        assert updated(heard) == [uri]


async def test_a_burst_read_by_one_pass_is_one_notification(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    token = vault["watcher"]
    heard = Heard()
    async with connect(relay, token, heard) as client:
        # The derive process held between two passes (a long pass does the same): the burst lands whole.
        paused = await relay.doc_id(token, folder="Notify", path="/Paused.md")
        await client.subscribe_resource("lens://Notify/Paused.md")
        writer, reader = await editors(relay, yclients, paused)
        derive = await the_derive_process(relay)
        os.kill(derive, signal.SIGSTOP)
        try:
            for n in range(BURST):
                await writer.insert(0, f"p{n} ")
            await reader.wait_text(contains=f"p{BURST - 1} ", timeout=5.0)
            await asyncio.sleep(1.0)
            assert updated(heard) == [], "the server told an edit itself"
        finally:
            os.kill(derive, signal.SIGCONT)
        await heard.wait(lambda: updated(heard), "resources/updated", seconds=BOUND + 5)
        await asyncio.sleep(1.5)
        assert updated(heard) == ["lens://Notify/Paused.md"]

        # Free-running: each pass reads what came since the last, so a burst is told once per pass at
        # most, not once per edit.
        burst = await relay.doc_id(token, folder="Notify", path="/Burst.md")
        await client.subscribe_resource("lens://Notify/Burst.md")
        writer, reader = await editors(relay, yclients, burst)
        started = time.monotonic()
        for n in range(BURST):
            await writer.insert(0, f"b{n} ")
        await reader.wait_text(contains=f"b{BURST - 1} ", timeout=5.0)
        took = time.monotonic() - started
        await asyncio.sleep(BOUND)
        told = [uri for uri in updated(heard) if uri.endswith("/Burst.md")]
        passes = 2 + int(took / 0.5)  # LENSRELAY_DERIVE_POLL_SECONDS
        assert 1 <= len(told) <= min(passes, BURST // 4), (len(told), took)


async def test_killed_the_derive_process_the_edits_go_on_and_its_successor_tells_them(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    heard = Heard()
    async with watching(relay, yclients, vault["watcher"], heard, "Down") as (uri, writer, reader):
        old = await the_derive_process(relay)
        os.kill(old, signal.SIGKILL)
        await poll(lambda: asyncio.to_thread(alive, old), lambda up: not up, what="the derive process gone")
        killed_at = time.monotonic()
        # The live path does not wait for it: the edit reaches the other editor at once.
        await writer.insert(0, "While it was down. ")
        await reader.wait_text(contains="While it was down.", timeout=2.0)
        await asyncio.sleep(1.0)
        assert time.monotonic() - killed_at < RESTART_SECONDS, "the launcher restarted it too soon to tell"
        assert updated(heard) == [], "told with no derive process: the server did notification work"
        new = await the_derive_process(relay)
        assert new != old
        restarted_at = time.monotonic()
        await heard.wait(lambda: updated(heard), "resources/updated after the restart", seconds=15.0)
        print(f"told {time.monotonic() - restarted_at:.2f} s after the new derive process was seen")
        assert set(updated(heard)) == {uri}


async def test_a_narrowed_or_revoked_token_is_told_nothing(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    doc_id = await relay.doc_id(vault["watcher"], folder="Notify", path="/Guarded.md")
    uri = "lens://Notify/Guarded.md"
    heard = Heard()
    async with (
        connect(relay, vault["watcher"], heard) as control,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        await control.subscribe_resource(uri)
        sessions = {}
        for name in ("to-narrow", "to-revoke"):
            raw = RawSession(http, vault[name])
            await raw.open(relay.http_url)
            await raw.subscribe(relay.http_url, uri)
            await raw.first_event_id(relay.http_url)  # a listening session: it opened its stream
            sessions[name] = raw.headers["Mcp-Session-Id"]
        # A note its token cannot see cannot be subscribed to.
        refused = await raw.request(
            relay.http_url, "resources/subscribe", {"uri": "lens://Other/Elsewhere.md"}
        )
        assert '"error"' in refused.text, refused.text
        await asyncio.to_thread(
            relay.manage, "shell", "-c", _NARROW_SCRIPT.format(raw=vault["to-narrow"], folder="Other")
        )
        await relay.adisable_tokens(revoke=[vault["to-revoke"]])

        writer, _ = await editors(relay, yclients, doc_id)
        await writer.insert(0, "Guarded edit. ")
        await heard.wait(lambda: updated(heard), "the control session's notification", seconds=BOUND + 5)
        await asyncio.sleep(1.0)
        out = await asyncio.to_thread(
            relay.manage, "shell", "-c", _TOLD_SCRIPT.format(sessions=list(sessions.values()), mark=_MARK)
        )
        line = next(line for line in out.splitlines() if line.startswith(_MARK))
        told = json.loads(line[len(_MARK) :])
        assert told == {sessions["to-narrow"]: [], sessions["to-revoke"]: []}
        assert updated(heard) == [uri]
