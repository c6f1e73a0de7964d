"""Server-sent notifications to the official `mcp` SDK client, on one daphne worker (SQLite), with derived
work inline as the test suite runs it (the server tells its own edits; with the derive process, as
deployed: test_mcp_notifications_derived).

The SDK client opens the GET stream itself after `initialize` (mode="legacy", 2025-11-25); what it receives
reaches its `message_handler`. The changes come from real clients and processes: an npm y-websocket
client edits a subscribed note and decides a suggestion by editing its markup away, `import_vault` runs
in its own process. A raw HTTP client checks resumption by `Last-Event-ID`.
"""

from __future__ import annotations

import asyncio
import re
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client

from .notify_clients import TIMEOUT, Heard, RawSession, event_ids, sdk_client
from .relay import Relay, TokenSpec

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

RELAY_ENV = {"LENSRELAY_MCP_EVENTS_POLL_SECONDS": "0.2"}


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("notify-vault")
    (root / "Watched.md").write_text("The watched note.\n")
    (root / "Draft.md").write_text("The draft says hello.\n")
    other = tmp_path_factory.mktemp("notify-other")
    (other / "Elsewhere.md").write_text("Not for the lens-only token.\n")
    return relay.setup(
        imports=[(root, "Notify"), (other, "Other")],
        tokens={"notify-only": TokenSpec("suggest", ("Notify",))},
    )


def connect(relay: Relay, token: str, heard: Heard | None = None) -> AbstractAsyncContextManager[Client]:
    return sdk_client(relay.http_url, token, heard)


async def test_a_subscribed_edit_from_a_yjs_client_is_notified(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    token = vault["notify-only"]
    doc_id = await relay.doc_id(token, folder="Notify", path="/Watched.md")
    heard = Heard()
    async with connect(relay, token, heard) as client:
        uri = "lens://Notify/Watched.md"
        await client.subscribe_resource(uri)
        writer = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]})
        for n in range(5):
            await writer.insert(0, f"{n} ")
        updated = await heard.wait(lambda: heard.of(types.ResourceUpdatedNotification), "resources/updated")
        assert str(updated[0].params.uri) == uri
        await asyncio.sleep(0.6)
        # Five keystrokes: told once per debounce window, not once each.
        assert 1 <= len(heard.of(types.ResourceUpdatedNotification)) <= 3
        await client.unsubscribe_resource(uri)
        count = len(heard.of(types.ResourceUpdatedNotification))
        await writer.insert(0, "after ")
        await asyncio.sleep(1.0)
        assert len(heard.of(types.ResourceUpdatedNotification)) == count


async def test_new_notes_are_listed_for_the_tokens_folders_only(
    relay: Relay, vault: dict[str, str], tmp_path: Path
) -> None:
    heard = Heard()
    async with connect(relay, vault["notify-only"], heard):
        hidden = tmp_path / "hidden"
        hidden.mkdir()
        (hidden / "Secret plan.md").write_text("Elsewhere only.\n")
        await relay.aimport_vault(hidden, folder="Other")
        seen = tmp_path / "seen"
        seen.mkdir()
        (seen / "Fresh.md").write_text("A new note.\n")
        await relay.aimport_vault(seen, folder="Notify")
        await heard.wait(lambda: heard.of(types.ResourceListChangedNotification), "list_changed")
        await asyncio.sleep(1.0)
        assert len(heard.of(types.ResourceListChangedNotification)) == 1  # Notify's; never Other's


MARKUP = re.compile(r"\{--(?:[^@]*@@)?(.*?)--\}\{\+\+(?:[^@]*@@)?(.*?)\+\+\}")


async def test_a_suggestion_accepted_in_an_editor_is_notified_to_its_session(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    token = vault["notify-only"]
    doc_id = await relay.doc_id(token, folder="Notify", path="/Draft.md")
    heard = Heard()
    async with connect(relay, token, heard) as client:
        await client.call_tool("read", {"file_path": "Notify/Draft.md"})
        result = await client.call_tool(
            "edit", {"file_path": "Notify/Draft.md", "old_string": "hello", "new_string": "goodbye"}
        )
        assert not result.is_error
        editor = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]})
        raw = await editor.wait_text(contains="goodbye", timeout=5)
        match = MARKUP.search(raw)
        assert match is not None, raw
        # Accept as an editor does: the markup goes, the proposed words stay.
        start, end = match.span()
        await editor.delete(start, end - start)
        await editor.insert(start, match.group(2))
        decided = await heard.wait(lambda: heard.of(types.LoggingMessageNotification), "decision")
        params = decided[0].params
        assert params.level == "notice" and params.logger == "lens-relay.suggestions"
        assert params.data["type"] == "suggestion_decided"
        assert params.data["status"] == "accepted" and params.data["path"] == "Notify/Draft.md"


async def test_last_event_id_replays_what_happened_while_disconnected(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    token = vault["notify-only"]
    doc_id = await relay.doc_id(token, folder="Notify", path="/Watched.md")
    uri = "lens://Notify/Watched.md"
    # A raw client, to control exactly when the stream is away.
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        raw = RawSession(http, token)
        await raw.open(relay.http_url)
        await raw.subscribe(relay.http_url, uri)
        last = await raw.first_event_id(relay.http_url)
        # Away: the note changes, and nobody is listening.
        writer = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]})
        await writer.insert(0, "while away ")
        await asyncio.sleep(1.0)
        received = await raw.resume_until(relay.http_url, last, "notifications/resources/updated")
        assert uri in received
        assert event_ids(received)[-1] > last
