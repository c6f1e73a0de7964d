"""The e2e harness proven against the reference server ``@y/websocket-server`` 0.1.1 (same wire protocol).

If these pass and a Lens Relay e2e test fails, the server is at fault, not the harness.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import YClientFactory
from .liveserver import LiveServer, LiveServerError, node_script_server
from .yclient import YClient, YClientError, utf16_index, utf16_len

pytestmark = pytest.mark.e2e

UNICODE_TEXT = "Grüße, café — 😀 emoji, 中文字符, ñandú 👩‍💻!"


def room_name() -> str:
    return f"room-{uuid.uuid4()}"


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers signal 0; it is gone for our purposes once reaped, which kill() does
    return True


@pytest.fixture
def scripted_server(node_modules: Path, tmp_path: Path) -> Iterator[LiveServer]:
    server = node_script_server(tmp_path, "scripted_server.mjs")
    server.start()
    try:
        yield server
    finally:
        server.kill()


def test_utf16_index_counts_like_javascript() -> None:
    text = "a😀b中c"
    assert utf16_len(text) == 6
    assert utf16_index(text, 2) == 3  # after the emoji (a surrogate pair)
    assert utf16_index(text, 4) == 5


async def test_two_clients_sync_unicode_text_both_ways(
    reference_server: LiveServer, yclients: YClientFactory
) -> None:
    room = room_name()
    alice = await yclients(reference_server.ws_url, room, label="alice")
    bob = await yclients(reference_server.ws_url, room, label="bob")

    await alice.insert(0, UNICODE_TEXT)
    assert await bob.wait_text(equals=UNICODE_TEXT) == UNICODE_TEXT

    # bob edits right after the emoji, at a UTF-16 index computed from the Python one
    after_emoji = UNICODE_TEXT.index("😀") + 1
    await bob.insert(utf16_index(UNICODE_TEXT, after_emoji), "✨")
    expected = UNICODE_TEXT[:after_emoji] + "✨" + UNICODE_TEXT[after_emoji:]
    assert await alice.wait_text(equals=expected) == expected

    # and a deletion of the CJK run, measured in UTF-16 units
    start = expected.index("中文字符")
    await alice.delete(utf16_index(expected, start), utf16_len("中文字符"))
    final = expected.replace("中文字符", "")
    assert await bob.wait_text(equals=final) == final
    assert await alice.text() == await bob.text() == final
    assert await alice.encode_state() != b""


async def test_awareness_of_each_client_is_visible_to_the_other(
    reference_server: LiveServer, yclients: YClientFactory
) -> None:
    room = room_name()
    alice = await yclients(reference_server.ws_url, room, awareness={"user": {"name": "Alice"}})
    bob = await yclients(reference_server.ws_url, room, awareness={"user": {"name": "Bøb 😀"}})
    assert alice.client_id is not None and bob.client_id is not None

    seen_by_alice = await alice.wait_awareness(2)
    seen_by_bob = await bob.wait_awareness(2)
    assert seen_by_alice[bob.client_id] == {"user": {"name": "Bøb 😀"}}
    assert seen_by_bob[alice.client_id] == {"user": {"name": "Alice"}}

    await bob.set_awareness({"user": {"name": "Bob"}, "cursor": 3})
    for _ in range(100):
        if (await alice.awareness_states()).get(bob.client_id, {}).get("cursor") == 3:
            break
        await asyncio.sleep(0.02)
    assert (await alice.awareness_states())[bob.client_id] == {"user": {"name": "Bob"}, "cursor": 3}


async def test_late_joiner_gets_the_full_text(reference_server: LiveServer, yclients: YClientFactory) -> None:
    room = room_name()
    writer = await yclients(reference_server.ws_url, room)
    for chunk in ("# Title\n", "Zweite Zeile: äöü\n", "第三行 😀\n"):
        await writer.insert(utf16_len(await writer.text()), chunk)
    full = "# Title\nZweite Zeile: äöü\n第三行 😀\n"
    await writer.wait_text(equals=full)

    late = await yclients(reference_server.ws_url, room)  # returns once synced
    assert await late.text() == full


async def test_folder_map_ops_and_rename_transaction_reach_the_other_client(
    reference_server: LiveServer, yclients: YClientFactory
) -> None:
    room = room_name()
    creator = await yclients(reference_server.ws_url, room)
    observer = await yclients(reference_server.ws_url, room)
    doc_id = str(uuid.uuid4())
    entry = {"id": doc_id, "type": "markdown", "version": 0}

    await creator.transact(
        [
            {"op": "mapSet", "name": "filemeta_v0", "key": "/Notes/Idée 中.md", "value": entry},
            {"op": "mapSet", "name": "docs", "key": "/Notes/Idée 中.md", "value": doc_id},
        ]
    )
    filemeta = await observer.wait_map("filemeta_v0", "/Notes/Idée 中.md", value=entry)
    assert filemeta == {"/Notes/Idée 中.md": entry}

    # rename = delete old key + set new key, in one transaction, on both maps
    await creator.transact(
        [
            {"op": "mapDelete", "name": "filemeta_v0", "key": "/Notes/Idée 中.md"},
            {"op": "mapSet", "name": "filemeta_v0", "key": "/Archive/Idée.md", "value": entry},
            {"op": "mapDelete", "name": "docs", "key": "/Notes/Idée 中.md"},
            {"op": "mapSet", "name": "docs", "key": "/Archive/Idée.md", "value": doc_id},
        ]
    )
    await observer.wait_map("filemeta_v0", "/Notes/Idée 中.md", present=False)
    assert await observer.get_map("filemeta_v0") == {"/Archive/Idée.md": entry}
    assert await observer.wait_map("docs", "/Archive/Idée.md") == {"/Archive/Idée.md": doc_id}

    await observer.map_set("folder_config", "name", "Lens")
    assert await creator.wait_map("folder_config", "name", value="Lens") == {"name": "Lens"}
    await observer.map_delete("folder_config", "name")
    assert await creator.wait_map("folder_config", "name", present=False) == {}


async def test_clients_resync_after_the_server_restarts_on_the_same_port(
    reference_server: LiveServer, yclients: YClientFactory
) -> None:
    room = room_name()
    alice = await yclients(reference_server.ws_url, room)
    bob = await yclients(reference_server.ws_url, room)
    await alice.insert(0, "before")
    await bob.wait_text(equals="before")
    port = reference_server.port
    mark = len(alice.events)

    await reference_server.arestart(hard=True)
    assert reference_server.port == port
    await alice.wait_event("connection-close", since=mark)
    await alice.wait_event("synced", since=mark, predicate=lambda event: event["synced"] is True)
    await bob.wait_event("synced", since=mark, predicate=lambda event: event["synced"] is True)

    await bob.insert(utf16_len("before"), " & after")
    assert await alice.wait_text(equals="before & after") == "before & after"


async def test_close_code_4400_range_is_reported_and_stops_reconnects(
    scripted_server: LiveServer, yclients: YClientFactory
) -> None:
    client = await yclients(
        scripted_server.ws_url,
        "doc",
        params={"deny": "read-only token", "send102": "1", "close": "4403", "reason": "revoked"},
        wait_synced=False,
    )
    denied = await client.wait_event("permission-denied")
    assert denied["reason"] == "read-only token"
    unknown = await client.wait_event("message")
    assert unknown["type"] == 102 and unknown["payload"] == "AQID"  # bytes 1, 2, 3
    close = await client.wait_event("connection-close")
    assert (close["code"], close["reason"], close["local"]) == (4403, "revoked", False)
    assert (await client.wait_event("closed"))["code"] == 4403

    await asyncio.sleep(0.6)  # longer than y-websocket's first backoff steps
    assert len(client.events_named("connection-close")) == 1
    assert (await client.info())["shouldConnect"] is False


async def test_other_close_codes_reconnect(scripted_server: LiveServer, yclients: YClientFactory) -> None:
    client = await yclients(scripted_server.ws_url, "doc", params={"close": "1011"}, wait_synced=False)
    first = await client.wait_event("connection-close", predicate=lambda event: event["code"] == 1011)
    after_first = client.events.index(first) + 1
    await client.wait_event(
        "status", predicate=lambda event: event["status"] == "connected", since=after_first
    )
    await client.wait_event(
        "connection-close", predicate=lambda event: event["code"] == 1011, since=after_first
    )
    assert client.events_named("closed") == []


async def test_client_errors_and_process_cleanup(reference_server: LiveServer, node_modules: Path) -> None:
    client = await YClient.start(reference_server.ws_url, room_name())
    pid = client.pid
    try:
        with pytest.raises(YClientError, match="unknown command"):
            await client.call("noSuchCommand")
        with pytest.raises(YClientError, match="index must be"):
            await client.insert(-1, "x")
        await client.insert(0, "abc")
        with pytest.raises(YClientError, match='text is "abc"'):
            await client.wait_text(equals="abcd", timeout=0.2)
        assert await client.text() == "abc"  # still usable after errors
    finally:
        await client.close()
    assert not client.running
    assert not process_alive(pid)
    with pytest.raises(YClientError):
        await client.text()

    crashed = await YClient.spawn()
    crashed_pid = crashed.pid
    await crashed.kill()
    assert not process_alive(crashed_pid)


def test_live_server_reports_startup_failure_with_log_tail(tmp_path: Path) -> None:
    server = LiveServer(
        lambda port: [sys.executable, "-c", f"print('cannot bind {port}'); raise SystemExit(3)"],
        {},
        "/ready",
        data_dir=tmp_path / "broken",
    )
    with pytest.raises(LiveServerError, match=r"exited with code 3[\s\S]*cannot bind"):
        server.start()
    assert not server.running

    failing_setup = LiveServer(
        lambda port: [sys.executable, "-c", "pass"],
        {},
        None,
        data_dir=tmp_path / "setup",
        setup=[[sys.executable, "-c", "import sys; sys.exit('migration exploded')"]],
    )
    with pytest.raises(LiveServerError, match="migration exploded"):
        failing_setup.start()
