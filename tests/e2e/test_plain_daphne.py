"""The plain ASGI path: `daphne lensrelay.asgi:application`, without our launcher and its fast paths.

`python -m lensrelay.server.serve` adds direct frames, an early handshake and a disconnect watch on top of
daphne (lensrelay/server/). Under plain daphne none of them is there: the consumer must fall back to the
ASGI send and receive, and two real y-websocket clients must still sync through it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import YClientFactory
from .liveserver import HOST
from .relay import Relay, Template, new_relay_server, poll
from .yclient import utf16_index

pytestmark = pytest.mark.e2e

FOLDER = "Plain"
NOTE = "# Plain daphne\n\nNo launcher here.\n"
EDIT = "Grüße 😀 中文 — "


def plain_daphne(port: int) -> list[str]:
    daphne = Path(sys.executable).with_name("daphne")
    command = [str(daphne)] if daphne.exists() else [sys.executable, "-m", "daphne"]
    return [*command, "-b", HOST, "-p", str(port), "lensrelay.asgi:application"]


@pytest.fixture(scope="module")
def relay(relay_db_template: Template, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relay]:
    server = new_relay_server(tmp_path_factory.mktemp("plain-daphne"), template=relay_db_template)
    server.argv_factory = plain_daphne
    server.start()
    try:
        yield Relay(server, relay_db_template.tokens)
    finally:
        server.stop()


async def test_two_clients_sync_under_plain_daphne(
    relay: Relay, yclients: YClientFactory, tmp_path: Path
) -> None:
    (tmp_path / "Note.md").write_text(NOTE, encoding="utf-8")
    assert "1 created" in relay.import_vault(tmp_path, folder=FOLDER)
    token = relay.create_token(name="plain-editor", role="edit")
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Note.md")
    url, params = relay.doc_url(doc_id), {"token": token}

    alice = await yclients(url, doc_id, params=params, awareness={"user": {"name": "alice"}}, label="alice")
    bob = await yclients(url, doc_id, params=params, awareness={"user": {"name": "bob"}}, label="bob")
    assert await alice.text() == NOTE and await bob.text() == NOTE

    at = NOTE.index("No launcher")
    await alice.insert(utf16_index(NOTE, at), EDIT)
    edited = NOTE[:at] + EDIT + NOTE[at:]
    assert await bob.wait_text(equals=edited) == edited
    await bob.insert(utf16_index(edited, len(edited)), "Bob was here.\n")
    final = edited + "Bob was here.\n"
    assert await alice.wait_text(equals=final) == final

    server_text = await poll(
        lambda: relay.doc_text(doc_id, token=token), lambda text: text == final, what="server text"
    )
    assert server_text == final
    for client in (alice, bob):
        states = await client.wait_awareness(2)
        assert sorted(state["user"]["name"] for state in states.values() if state) == ["alice", "bob"]
