"""The suggestion follower in the derive process the launcher starts beside the server
(LENSRELAY_DERIVED_WORK=process): an assistant proposes an edit through the official `mcp` SDK client, a
person decides it in an npm y-websocket client by turning the markup into one of its words, and the row
follows:

- rejected (the old word kept) or accepted (the new word kept) within BOUND seconds (docs/scale.md,
  "Freshness": the derive poll plus a pass);
- with the derive process killed the edit still reaches the other editor and the row stays pending (the
  server does no follower work); the launcher's new derive process settles it.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from typing import Any

import pytest
from mcp import Client

from .notify_clients import sdk_client
from .relay import Relay, TokenSpec, poll
from .test_derive_process import alive
from .test_mcp_notifications_derived import the_derive_process

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

BOUND = 2.0  # seconds from the person's decision to the row's (LENSRELAY_DERIVE_POLL_SECONDS 0.5 + a pass)
RESTART_SECONDS = 3.0
RELAY_ENV = {
    "LENSRELAY_DERIVED_WORK": "process",
    "LENSRELAY_DERIVE_RESTART_SECONDS": str(RESTART_SECONDS),
}
TEXT = "Plants make sugar from light.\n"


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("follower")
    for name in ("Kept", "Dropped", "Down"):
        (root / f"{name}.md").write_text(TEXT)
    return relay.setup(imports=[(root, "Follow")], tokens={"assistant": TokenSpec("suggest", ("Follow",))})


async def status_of(client: Client, path: str) -> str:
    """The status `list_suggestions` gives the token's one suggestion on `path`."""
    listed = await client.call_tool("list_suggestions", {"path": path})
    assert not listed.is_error, listed
    text = "".join(getattr(block, "text", "") for block in listed.content)
    found = re.findall(r"^- \w+ ([A-Z]+) edit ", text, flags=re.M)
    assert len(found) == 1, text
    return found[0].lower()


async def propose(client: Client, path: str) -> None:
    await client.call_tool("read", {"file_path": path})
    proposed = await client.call_tool(
        "edit", {"file_path": path, "old_string": "sugar", "new_string": "glucose"}
    )
    assert not proposed.is_error, proposed
    assert await status_of(client, path) == "pending"


async def decide_in_editor(writer: Any, *, keep: str) -> None:
    """What an editor's accept or reject does, in one transaction: the markup becomes one of its words."""
    text = await writer.wait_text(contains="++}", timeout=5.0)
    assert all(ord(c) < 0x10000 for c in text)  # no surrogate pairs: UTF-16 indices are the Python ones
    start = text.index("{--")
    end = text.index("++}", start) + 3
    await writer.transact(
        [
            {"op": "delete", "name": "contents", "index": start, "length": end - start},
            {"op": "insert", "name": "contents", "index": start, "text": keep},
        ]
    )


async def settled(client: Client, path: str, *, seconds: float) -> tuple[str, float]:
    started = time.monotonic()
    status = await poll(
        lambda: status_of(client, path), lambda s: s != "pending", timeout=seconds, what=f"{path} settled"
    )
    return status, time.monotonic() - started


async def editors(relay: Relay, yclients: Any, doc_id: str) -> tuple[Any, Any]:
    params = {"token": relay.tokens["edit"]}
    writer = await yclients(relay.doc_url(doc_id), doc_id, params=params, label="writer")
    reader = await yclients(relay.doc_url(doc_id), doc_id, params=params, label="reader")
    return writer, reader


@pytest.mark.parametrize(
    ("name", "keep", "want"), [("Dropped", "sugar", "rejected"), ("Kept", "glucose", "accepted")]
)
async def test_a_decision_in_an_editor_is_followed_by_the_derive_process_within_the_bound(
    relay: Relay, vault: dict[str, str], yclients: Any, name: str, keep: str, want: str
) -> None:
    await the_derive_process(relay)
    token = vault["assistant"]
    path = f"Follow/{name}.md"
    doc_id = await relay.doc_id(token, folder="Follow", path=f"/{name}.md")
    async with sdk_client(relay.http_url, token) as client:
        await propose(client, path)
        writer, reader = await editors(relay, yclients, doc_id)
        await decide_in_editor(writer, keep=keep)
        await reader.wait_text(equals=TEXT.replace("sugar", keep), timeout=5.0)
        status, took = await settled(client, path, seconds=BOUND + 5)
        assert status == want
        assert took < BOUND, f"settled after {took:.2f} s"


async def test_with_the_derive_process_killed_the_edit_flows_and_its_successor_settles_the_row(
    relay: Relay, vault: dict[str, str], yclients: Any
) -> None:
    token = vault["assistant"]
    path = "Follow/Down.md"
    doc_id = await relay.doc_id(token, folder="Follow", path="/Down.md")
    async with sdk_client(relay.http_url, token) as client:
        await propose(client, path)
        writer, reader = await editors(relay, yclients, doc_id)
        old = await the_derive_process(relay)
        os.kill(old, signal.SIGKILL)
        await poll(lambda: asyncio.to_thread(alive, old), lambda up: not up, what="the derive process gone")
        killed_at = time.monotonic()
        await decide_in_editor(writer, keep="sugar")
        # The live path does not wait for it: the edit reaches the other editor at once.
        await reader.wait_text(equals=TEXT, timeout=2.0)
        await asyncio.sleep(1.0)
        assert time.monotonic() - killed_at < RESTART_SECONDS, "the launcher restarted it too soon to tell"
        assert await status_of(client, path) == "pending", (
            "settled with no derive process: the server followed"
        )
        new = await the_derive_process(relay)
        assert new != old
        status, took = await settled(client, path, seconds=15.0)
        print(f"settled {took:.2f} s after the new derive process was seen")
        assert status == "rejected"
