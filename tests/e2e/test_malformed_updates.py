"""The malformed-update corpus against the real server: a real y-websocket client's socket closes 4400 (never
1011, so it stops reconnecting), HTTP answers a JSON 400 (never a 5xx page), and the document stays as it was
for everyone, the client that keeps editing included."""

from __future__ import annotations

from pathlib import Path

import pytest

from lensrelay.protocol import wire
from tests.lensrelay.update_corpus import malformed_updates, refused_by_pycrdt

from .conftest import YClientFactory
from .relay import Relay
from .test_limits import edit_doc
from .test_sync import assert_refused_for_good
from .yclient import utf16_len

FOLDER = "Fuzz"
WS_CASES = 12
HTTP_CASES = 60


def frame_of(update: bytes) -> bytes:
    return wire.var_uint(wire.MESSAGE_SYNC) + wire.var_uint(wire.SYNC_UPDATE) + wire.var_bytes(update)


@pytest.fixture(scope="module")
def fuzz_relay(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Relay:
    vault: Path = tmp_path_factory.mktemp("fuzz-vault")
    (vault / "Target.md").write_text("# Target\n\nGrüße 😀 中文\n", encoding="utf-8")
    relay.import_vault(vault, folder=FOLDER)
    return relay


async def test_malformed_updates_over_a_real_websocket_close_4400_and_change_nothing(
    fuzz_relay: Relay, yclients: YClientFactory
) -> None:
    token, doc_id, url, params = await edit_doc(fuzz_relay, folder=FOLDER, path="/Target.md")
    before = await fuzz_relay.as_update(doc_id, token=token)
    corpus = malformed_updates(before, seed=4400, count=WS_CASES, attempts=1500)
    assert all(refused_by_pycrdt(before, update) for update in corpus)
    bystander = await yclients(url, doc_id, params=params, label="bystander")
    offender = await yclients(url, doc_id, params=params, label="offender")
    for index, update in enumerate(corpus):
        mark = len(offender.events)
        await offender.send_raw(frame_of(update))
        await assert_refused_for_good(
            offender, code=4400, since=mark, what=f"case {index} {update[:24].hex()}"
        )
        await offender.reconnect()
        await offender.wait_synced()
    assert await fuzz_relay.as_update(doc_id, token=token) == before
    # the document still works: an edit reaches the other client
    text = await bystander.text()
    await bystander.insert(utf16_len(text), "still fine\n")
    assert await offender.wait_text(equals=text + "still fine\n")


async def test_malformed_updates_over_http_get_json_400_and_change_nothing(fuzz_relay: Relay) -> None:
    token = fuzz_relay.tokens["edit"]
    doc_id = await fuzz_relay.doc_id(token, folder=FOLDER, path="/Target.md")
    before = await fuzz_relay.as_update(doc_id, token=token)
    for index, update in enumerate(malformed_updates(before, seed=400, count=HTTP_CASES, attempts=1500)):
        response = await fuzz_relay.request("POST", f"/d/{doc_id}/update", token=token, content=update)
        assert response.status_code == 400, f"case {index} {update[:24].hex()}: {response.status_code}"
        assert response.headers["content-type"].startswith("application/json")
    assert await fuzz_relay.as_update(doc_id, token=token) == before
