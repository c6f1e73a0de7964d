"""A client that resumes its GET stream from further back than the event log holds is first told that
every list and every subscribed resource changed, before any replayed event (README, "Notifications").

One daphne worker with a log of LOG_SIZE events and derived work inline (the server tells its own edits at
most once per 250 ms per note). A raw HTTP client opens a handshake session, subscribes to a note, reads
the priming id and goes away; a y-websocket client then edits the note more often than the log holds and a
new note appears in the folder (`import_vault` in its own process); the client resumes with the old
`Last-Event-ID` and reads the whole resumed stream (LENSRELAY_MCP_STREAM_MAX_SECONDS ends it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest

from .notify_clients import TIMEOUT, RawSession, sse_events
from .relay import Relay, TokenSpec

pytestmark = pytest.mark.e2e

LOG_SIZE = 4
EDITS = LOG_SIZE + 3
RELAY_ENV = {
    "LENSRELAY_MCP_EVENTS_POLL_SECONDS": "0.2",
    "LENSRELAY_MCP_EVENT_LOG_SIZE": str(LOG_SIZE),
    "LENSRELAY_MCP_STREAM_MAX_SECONDS": "2",
}
LIST_CHANGED = "notifications/resources/list_changed"
UPDATED = "notifications/resources/updated"


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("resync-vault")
    (root / "Watched.md").write_text("The watched note.\n")
    return relay.setup(imports=[(root, "Notify")], tokens={"watcher": TokenSpec("suggest", ("Notify",))})


async def test_resuming_past_the_log_is_told_everything_changed_before_any_replay(
    relay: Relay, vault: dict[str, str], yclients: Any, tmp_path: Path
) -> None:
    token = vault["watcher"]
    doc_id = await relay.doc_id(token, folder="Notify", path="/Watched.md")
    uri = "lens://Notify/Watched.md"
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        raw = RawSession(http, token)
        await raw.open(relay.http_url)
        await raw.subscribe(relay.http_url, uri)
        last = await raw.first_event_id(relay.http_url)
        # Away: more changes than the log holds, each its own event (edits 0.4 s apart, past the
        # 250 ms window), the last one a new note in the folder.
        writer = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]})
        for n in range(EDITS):
            await writer.insert(0, f"edit {n} ")
            await asyncio.sleep(0.4)
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        (fresh / "Fresh.md").write_text("A new note.\n")
        await relay.aimport_vault(fresh, folder="Notify")
        await asyncio.sleep(0.6)
        events = sse_events(await raw.resume_whole(relay.http_url, last))

    replayed = [seq for seq, _ in events if seq is not None]
    assert replayed and replayed == sorted(replayed), events
    newest = replayed[-1]
    assert newest - last > LOG_SIZE, f"only {newest - last} events happened; the test needs more: {events}"
    # First, without ids: every list changed, and every subscribed resource.
    hints = [(seq, m.get("method"), (m.get("params") or {}).get("uri")) for seq, m in events]
    assert hints[:2] == [(None, LIST_CHANGED, None), (None, UPDATED, uri)], hints
    # Then what the log still holds: the last LOG_SIZE events, the edits and the new note among them.
    assert all(seq is not None and newest - LOG_SIZE < seq for seq, _ in events[2:]), hints
    assert [method for _, method, _ in hints[2:]] == [UPDATED, LIST_CHANGED], hints
