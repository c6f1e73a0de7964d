"""Nothing a client has seen is lost: not across a graceful restart, not across a SIGKILL.

Clients still connected would re-send their whole state after a restart and hide a loss, so every client
is gone before the server comes back, and the text is read by a NEW client, from `/d/<id>/as-update` and
from `export_vault` (the database as a separate process sees it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import YClientFactory
from .relay import Relay
from .yclient import YClient, utf16_len

pytestmark = pytest.mark.e2e

FOLDER = "Durable"
RESTART = "# Restart\n\nBefore the restart.\n"
KILL = "# Kill\n\nBefore the crash.\n"


@dataclass(frozen=True)
class Persisted:
    relay: Relay
    token: str


@pytest.fixture(scope="module")
def persisted(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Persisted:
    vault: Path = tmp_path_factory.mktemp("durable-vault")
    (vault / "Restart.md").write_text(RESTART, encoding="utf-8")
    (vault / "Kill.md").write_text(KILL, encoding="utf-8")
    out = relay.import_vault(vault, folder=FOLDER)
    assert "2 created" in out, out
    return Persisted(relay=relay, token=relay.tokens["edit"])


async def append(client: YClient, text: str) -> None:
    await client.insert(utf16_len(await client.text()), text)


async def assert_text_after_restart(
    persisted: Persisted, yclients: YClientFactory, *, doc_id: str, expected: str
) -> None:
    """A new client and the server's own Doc (reloaded from the database) both have ``expected``."""
    relay, token = persisted.relay, persisted.token
    fresh = await yclients(relay.doc_url(doc_id), doc_id, params={"token": token}, label="fresh")
    assert await fresh.text() == expected
    assert await relay.doc_text(doc_id, token=token) == expected


async def test_a_document_survives_a_graceful_restart(persisted: Persisted, yclients: YClientFactory) -> None:
    relay, token = persisted.relay, persisted.token
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Restart.md")
    url, params = relay.doc_url(doc_id), {"token": token}
    alice = await yclients(url, doc_id, params=params, label="alice")
    bob = await yclients(url, doc_id, params=params, label="bob")
    await append(alice, "Written by alice 😀.\n")
    await bob.wait_text(contains="alice 😀")
    await append(bob, "Written by bob, 中文.\n")
    expected = RESTART + "Written by alice 😀.\nWritten by bob, 中文.\n"
    await alice.wait_text(equals=expected)
    await bob.wait_text(equals=expected)
    await alice.close()
    await bob.close()

    first_pid = relay.server.pid
    await relay.server.arestart()  # SIGTERM, then start on the same port and database
    assert relay.server.pid != first_pid

    await assert_text_after_restart(persisted, yclients, doc_id=doc_id, expected=expected)


async def test_a_document_survives_sigkill_right_after_the_second_client_saw_the_edit(
    persisted: Persisted, yclients: YClientFactory, tmp_path: Path
) -> None:
    relay, token = persisted.relay, persisted.token
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Kill.md")
    url, params = relay.doc_url(doc_id), {"token": token}
    alice = await yclients(url, doc_id, params=params, label="alice")
    bob = await yclients(url, doc_id, params=params, label="bob")

    # a burst of edits without waiting in between, so several may be in flight at once
    pieces = [f"line {i} — ünïcödé 👍 {'字' * i}\n" for i in range(8)]
    for piece in pieces:
        await append(alice, piece)
    expected = KILL + "".join(pieces)
    await bob.wait_text(equals=expected)
    relay.server.kill()  # at once, on this thread: no shutdown hooks, no flush

    # no client may survive to re-send its state to the restarted server
    await alice.kill()
    await bob.kill()
    await relay.server.astart()

    await assert_text_after_restart(persisted, yclients, doc_id=doc_id, expected=expected)
    # and the database itself, as a separate process reads it
    await relay.aexport_vault(folder=FOLDER, path=tmp_path / "out")
    assert (tmp_path / "out" / "Kill.md").read_bytes() == expected.encode("utf-8")
