"""The derive process rewrites the search row of a note typed into without pause every
LENSRELAY_SEARCH_REWRITE_SECONDS (issue 36), so between rewrites it owes the row of the last change. Owed is
never lost: a derive process that is stopped writes the rows it owes before it exits, and one that is
killed leaves them to its successor, which finds them by comparing modified times after its first pass.
Real y-websocket clients type; searches run in another process."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from lensrelay.docstore.derived import WINDOW

from .conftest import YClientFactory
from .relay import Relay, poll
from .test_derive_process import alive, derive_children, searched

pytestmark = pytest.mark.e2e

# Longer than one check of the search index (a management shell, a second or two): a row found before
# the launcher starts the next derive process was written by the one that stopped.
RESTART_SECONDS = 8.0
# Another process writing many changes to another note (an import, a script): it pushes the owed note's
# last row out of the window of the log a restarted derive process reads again.
_BUSY_SCRIPT = """
from pycrdt import Doc, Text
from lensrelay.docstore import persistence
doc = Doc()
doc.apply_update(persistence.load_state({doc_id!r}).update)
text = doc.get("contents", type=Text)
for n in range({rows}):
    before = doc.get_state()
    text.insert(0, "x")
    persistence.append_update({doc_id!r}, doc.get_update(before), is_content=True, writer="script")
print("written")
"""
RELAY_ENV = {
    "LENSRELAY_DERIVED_WORK": "process",
    "LENSRELAY_DERIVE_RESTART_SECONDS": str(RESTART_SECONDS),
    # Every change after a note's first in a process waits for its rewrite for the whole test.
    "LENSRELAY_SEARCH_REWRITE_SECONDS": "600",
}


@pytest.fixture(scope="module")
def vault(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Relay:
    root = tmp_path_factory.mktemp("owed-vault")
    (root / "Typed.md").write_text("typed into\n", encoding="utf-8")
    (root / "Busy.md").write_text("busy\n", encoding="utf-8")
    relay.setup(imports=[(root, "Owed")])
    return relay


async def one_derive_process(relay: Relay, *, other_than: int = 0) -> int:
    server_pid = relay.server.pid or 0
    (pid,) = await poll(
        lambda: asyncio.to_thread(derive_children, server_pid),
        lambda pids: len(pids) == 1 and pids[0] != other_than,
        timeout=RESTART_SECONDS + 15,
        what="one derive process beside the server",
    )
    return int(pid)


def passes_logged(relay: Relay) -> int:
    """Passes of the derive processes so far that handled notes (the launcher's log holds their lines)."""
    return relay.server.log_path.read_text(errors="replace").count("derived views brought in step")


async def a_pass_after(relay: Relay, count: int) -> None:
    await poll(
        lambda: asyncio.to_thread(passes_logged, relay),
        lambda now: now > count,
        timeout=30.0,
        what="a pass of the derive process that handled notes",
    )


async def gone(pid: int) -> None:
    await poll(lambda: asyncio.to_thread(alive, pid), lambda up: not up, what=f"derive process {pid} gone")


async def test_a_row_owed_is_written_by_a_stopping_derive_process_and_survives_a_kill(
    vault: Relay, yclients: YClientFactory
) -> None:
    relay = vault
    first = await one_derive_process(relay)
    token = relay.tokens["edit"]
    note = await relay.doc_id(token, folder="Owed", path="/Typed.md")
    writer = await yclients(relay.doc_url(note), note, params={"token": token}, label="writer")
    # The first pass of every derive process handles the imported note: a change after it is owed.
    await a_pass_after(relay, 0)
    await asyncio.sleep(1.0)
    await writer.insert(0, "stopword ")
    await asyncio.sleep(2.0)  # several passes
    assert await asyncio.to_thread(searched, relay, ["stopword"]) == [[]]

    before = await asyncio.to_thread(passes_logged, relay)
    os.kill(first, signal.SIGTERM)
    await gone(first)
    assert await asyncio.to_thread(derive_children, relay.server.pid or 0) == []
    assert await asyncio.to_thread(searched, relay, ["stopword"]) == [[note]]

    second = await one_derive_process(relay, other_than=first)
    await a_pass_after(relay, before)  # its first pass reads the log's last rows again: the note among them
    await asyncio.sleep(1.0)
    await writer.insert(0, "killword ")
    await asyncio.sleep(2.0)
    assert await asyncio.to_thread(searched, relay, ["killword"]) == [[]]
    # Its successor reads the last WINDOW rows of the log again, which would find the note: after these it
    # finds it only by comparing modified times.
    busy = await relay.doc_id(token, folder="Owed", path="/Busy.md")
    script = _BUSY_SCRIPT.format(doc_id=busy, rows=WINDOW + 100)
    assert "written" in await asyncio.to_thread(relay.manage, "shell", "-c", script)
    await asyncio.sleep(2.0)  # the killed process's cursor is past them
    os.kill(second, signal.SIGKILL)
    await gone(second)
    await one_derive_process(relay, other_than=second)
    await poll(
        lambda: asyncio.to_thread(searched, relay, ["killword", "stopword"]),
        lambda found: found == [[note], [note]],
        timeout=20.0,
        what="the row the killed derive process owed",
    )
