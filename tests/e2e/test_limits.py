"""One size limit for a WebSocket frame and an HTTP update, enforced by the real server
(`lensrelay.server.serve`).

Below the limit a real y-websocket paste and an HTTP update arrive whole (plain daphne would drop anything
over 1 MiB, Django's request body anything over 2.5 MB); above it the socket closes 4413 with a reason and the
HTTP answer is a JSON 413, and nothing stored changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pycrdt import Doc, Text

from .conftest import YClientFactory
from .relay import Relay, read_text
from .test_sync import assert_refused_for_good
from .yclient import utf16_len

MAX_FRAME_BYTES = 4 * 1024 * 1024
RELAY_ENV = {"LENSRELAY_MAX_FRAME_BYTES": str(MAX_FRAME_BYTES)}
FOLDER = "Limits"
PASTE_BYTES = 3_000_000
SLOW = 60.0


@pytest.fixture(scope="module")
def docs(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Relay:
    vault: Path = tmp_path_factory.mktemp("limits-vault")
    for name in ("Paste", "TooBig", "Http"):
        (vault / f"{name}.md").write_text(f"# {name}\n", encoding="utf-8")
    relay.import_vault(vault, folder=FOLDER)
    return relay


async def edit_doc(relay: Relay, *, folder: str, path: str) -> tuple[str, str, str, dict[str, str]]:
    """An edit token, the document's id, and its y-websocket URL and params."""
    token = relay.tokens["edit"]
    doc_id = await relay.doc_id(token, folder=folder, path=path)
    return token, doc_id, relay.doc_url(doc_id), {"token": token}


def big_text(size: int, tag: str) -> str:
    """ASCII text of exactly about ``size`` bytes (a Yjs update carries it nearly byte for byte)."""
    line = f"{tag} line of plain words for a big paste.\n"
    return (line * (size // len(line) + 1))[:size]


async def test_a_3mb_paste_from_y_websocket_reaches_the_other_client(
    docs: Relay, yclients: YClientFactory
) -> None:
    token, doc_id, url, params = await edit_doc(docs, folder=FOLDER, path="/Paste.md")
    alice = await yclients(url, doc_id, params=params, label="alice")
    bob = await yclients(url, doc_id, params=params, label="bob")
    start = await alice.text()
    paste = big_text(PASTE_BYTES, "alice")
    mark = len(alice.events)
    await alice.insert(utf16_len(start), paste)
    assert await bob.wait_text(equals=start + paste, timeout=SLOW) == start + paste
    assert await docs.doc_text(doc_id, token=token) == start + paste
    # one frame, taken as it is: no close, no reconnect loop
    assert not alice.events_named("closed", since=mark)
    assert not alice.events_named("connection-close", since=mark)


async def test_a_paste_over_the_limit_closes_4413_with_a_reason_and_changes_nothing(
    docs: Relay, yclients: YClientFactory
) -> None:
    token, doc_id, url, params = await edit_doc(docs, folder=FOLDER, path="/TooBig.md")
    before = await docs.as_update(doc_id, token=token)
    offender = await yclients(url, doc_id, params=params, label="offender")
    mark = len(offender.events)
    await offender.insert(0, big_text(MAX_FRAME_BYTES + 1024, "offender"))
    await assert_refused_for_good(offender, code=4413, since=mark, what="paste over the limit")
    closed = offender.events_named("closed", since=mark)[0]
    assert "frame too large" in closed["reason"] and str(MAX_FRAME_BYTES) in closed["reason"], closed
    assert await docs.as_update(doc_id, token=token) == before
    # the document and the server are fine for the next client
    await yclients(url, doc_id, params=params, label="next")


async def test_http_updates_up_to_the_limit_apply_and_larger_ones_get_a_json_413(docs: Relay) -> None:
    token = docs.tokens["edit"]
    doc_id = await docs.doc_id(token, folder=FOLDER, path="/Http.md")
    before = await docs.as_update(doc_id, token=token)
    local: Doc = Doc()
    local.apply_update(before)
    state = local.get_state()
    text = local.get("contents", type=Text)
    text += big_text(PASTE_BYTES, "http")
    update = local.get_update(state)
    assert 2_600_000 < len(update) < MAX_FRAME_BYTES  # over Django's 2.5 MB, under ours
    response = await docs.request("POST", f"/d/{doc_id}/update", token=token, content=update)
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": True}
    after = await docs.as_update(doc_id, token=token)
    assert read_text(after) == str(text)

    too_big = b"\x00" * (MAX_FRAME_BYTES + 1)
    response = await docs.request("POST", f"/d/{doc_id}/update", token=token, content=too_big)
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["limit"] == MAX_FRAME_BYTES
    assert await docs.as_update(doc_id, token=token) == after
