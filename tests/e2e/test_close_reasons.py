"""What a real y-websocket client is told when the server closes its socket, and what it may send.

Every refusal reaches the npm `y-websocket` provider with its code and a reason it can show (`closed`
event): 4401 (bad, expired or tampered token), 4403 (the token lost the folder while connected), 4404
(unknown document, unknown socket route) and 4413 (frame over the limit). y-sweet's older `/doc/ws/<id>`
route syncs like `/d/<id>/ws/<id>`, and the Relay.md provider's own message types (3-8) never close
anything: 3 and 7 are answered (7 in tests/e2e/test_relay_client_maps.py), the others ignored.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from .conftest import YClientFactory
from .relay import Relay, RelayTokens, TokenSpec
from .test_sync import assert_refused_for_good

pytestmark = pytest.mark.e2e

MAX_FRAME_BYTES = 64 * 1024
RELAY_ENV = {"LENSRELAY_MAX_FRAME_BYTES": str(MAX_FRAME_BYTES)}
TIMEOUT = 10.0

_NARROW_SCRIPT = """
from lensrelay.access.tokens import token_set_folders
from lensrelay.models import ApiToken, Folder
token = ApiToken.objects.get(token_hash=ApiToken.hash_token({raw!r}))
token_set_folders(token=token, folders=[Folder.objects.get(name={folder!r})])
print("narrowed")
"""


@pytest.fixture(scope="module")
def site(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> RelayTokens:
    alpha: Path = tmp_path_factory.mktemp("alpha")
    (alpha / "Note.md").write_text("# Note\n", encoding="utf-8")
    beta: Path = tmp_path_factory.mktemp("beta")
    (beta / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    scoped = relay.setup(
        imports=[(alpha, "Alpha"), (beta, "Beta")],
        tokens={"narrowed": TokenSpec("edit", ("Alpha", "Beta"))},
    )
    return RelayTokens(relay=relay, tokens={**relay.tokens, **scoped})


async def note(site: RelayTokens, folder: str, path: str) -> str:
    return await site.relay.doc_id(site.tokens["edit"], folder=folder, path=path)


async def refused(yclients: YClientFactory, url: str, room: str, token: str, *, code: int, label: str) -> str:
    client = await yclients(url, room, params={"token": token}, wait_synced=False, label=label)
    closed = await client.wait_event("closed", timeout=TIMEOUT)
    assert closed["code"] == code, closed
    await assert_refused_for_good(client, code=code, what=label)
    reason: str = closed["reason"]
    assert reason, f"{label}: empty close reason"
    return reason


async def test_4401_says_the_token_is_bad(site: RelayTokens, yclients: YClientFactory) -> None:
    doc_id = await note(site, "Alpha", "Note.md")
    url = site.relay.doc_url(doc_id)
    reason = await refused(yclients, url, doc_id, "lr_unknown", code=4401, label="unknown token")
    assert reason == "token unknown"
    # a tampered y-sweet client token, and one for another document
    minted = httpx.post(
        f"{site.relay.http_url}/doc/{doc_id}/auth",
        headers={"Authorization": f"Bearer {site.tokens['edit']}"}, json={}, timeout=TIMEOUT,
    ).json()["token"]  # fmt: skip
    tampered = minted[:-3] + ("AAA" if not minted.endswith("AAA") else "BBB")
    assert "malformed" in await refused(yclients, url, doc_id, tampered, code=4401, label="tampered")
    other = await note(site, "Beta", "Plan.md")
    reason = await refused(
        yclients, site.relay.doc_url(other), other, minted, code=4401, label="other document"
    )
    assert "another document" in reason


async def test_4403_says_the_folder_was_lost(site: RelayTokens, yclients: YClientFactory) -> None:
    doc_id = await note(site, "Beta", "Plan.md")
    client = await yclients(
        site.relay.doc_url(doc_id), doc_id, params={"token": site.tokens["narrowed"]}, label="narrowed"
    )
    await asyncio.to_thread(
        site.relay.manage, "shell", "-c", _NARROW_SCRIPT.format(raw=site.tokens["narrowed"], folder="Alpha")
    )
    closed = await client.wait_event("closed", timeout=TIMEOUT)
    assert closed["code"] == 4403 and "folder" in closed["reason"], closed


async def test_4404_says_the_document_or_route_is_unknown(
    site: RelayTokens, yclients: YClientFactory
) -> None:
    token = site.tokens["edit"]
    missing = "no-such-document"
    reason = await refused(
        yclients, site.relay.doc_url(missing), missing, token, code=4404, label="unknown document"
    )
    assert reason == "unknown document"
    ws = site.relay.http_url.replace("http://", "ws://", 1)
    reason = await refused(yclients, f"{ws}/nowhere/ws", "x", token, code=4404, label="unknown route")
    assert "no socket route" in reason and "/d/<id>/ws/<id>" in reason
    # a plain HTTP request for a socket route is a 4xx, never a 500
    response = httpx.get(f"{site.relay.http_url}/nowhere/ws/x", timeout=TIMEOUT)
    assert response.status_code == 404


async def test_4413_says_the_limit(site: RelayTokens, yclients: YClientFactory) -> None:
    doc_id = await note(site, "Alpha", "Note.md")
    client = await yclients(
        site.relay.doc_url(doc_id), doc_id, params={"token": site.tokens["edit"]}, label="paster"
    )
    await client.insert(0, "x" * (MAX_FRAME_BYTES + 10))
    closed = await client.wait_event("closed", timeout=TIMEOUT)
    assert closed["code"] == 4413 and str(MAX_FRAME_BYTES) in closed["reason"], closed


async def test_the_older_ysweet_route_syncs(site: RelayTokens, yclients: YClientFactory) -> None:
    doc_id = await note(site, "Alpha", "Note.md")
    ws = site.relay.http_url.replace("http://", "ws://", 1)
    params = {"token": site.tokens["edit"]}
    old = await yclients(f"{ws}/doc/ws", doc_id, params=params, label="old route")
    new = await yclients(site.relay.doc_url(doc_id), doc_id, params=params, label="new route")
    await old.insert(0, "via /doc/ws: ")
    await new.wait_text(contains="via /doc/ws: ", timeout=TIMEOUT)


# The Relay.md provider's message types (No-Instructions/Relay src/client/provider.ts), as it frames them.
RELAY_FRAMES = {
    "query awareness": b"\x03",
    "event": b"\x04" + bytes([17]) + b'{"type":"hello"}' + b"\x00",
    "event subscribe": b"\x05\x01" + bytes([16]) + b"document.updated",
    "event unsubscribe": b"\x06\x01" + bytes([16]) + b"document.updated",
    "query sub-documents": b"\x07",
    "sub-documents": b"\x08\x00",
}


async def test_relay_client_messages_never_close_the_socket(
    site: RelayTokens, yclients: YClientFactory
) -> None:
    doc_id = await note(site, "Alpha", "Note.md")
    url, params = site.relay.doc_url(doc_id), {"token": site.tokens["edit"]}
    relay_client = await yclients(url, doc_id, params=params, label="relay-style")
    other = await yclients(url, doc_id, params=params, label="other")
    mark = len(relay_client.events)
    for frame in RELAY_FRAMES.values():
        await relay_client.send_raw(frame)
    await relay_client.insert(0, "still editing. ")
    await other.wait_text(contains="still editing. ", timeout=TIMEOUT)
    closes = relay_client.events_named("connection-close", since=mark)
    assert closes == [], closes
