"""Real npm `yjs` + `y-websocket` clients syncing an imported document through a live daphne server."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import YClientFactory
from .relay import Relay, poll
from .yclient import YClient, utf16_index, utf16_len

pytestmark = pytest.mark.e2e

# A small frame limit, so the "frame too large" close can be provoked cheaply.
MAX_FRAME_BYTES = 64 * 1024
RELAY_ENV = {"LENSRELAY_MAX_FRAME_BYTES": str(MAX_FRAME_BYTES)}

FOLDER = "Sync"
HELLO = "# Hello\n\nFirst line.\n"
LATE = "# Late joiners\n\nEverything before you arrived.\n"
READ_ONLY = "# Read only\n\nLook, don't touch.\n"
READ_ONLY_ROLES = ("view", "suggest")
UNICODE_EDIT = "Grüße, café — 😀 emoji, 中文字符, ñandú 👩‍💻 déjà vu!"


@dataclass(frozen=True)
class Synced:
    relay: Relay
    token: str
    role_tokens: dict[str, str]


@pytest.fixture(scope="module")
def synced(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Synced:
    vault: Path = tmp_path_factory.mktemp("sync-vault")
    (vault / "Hello.md").write_text(HELLO, encoding="utf-8")
    (vault / "Late.md").write_text(LATE, encoding="utf-8")
    (vault / "Presence.md").write_text("# Presence\n", encoding="utf-8")
    for role in READ_ONLY_ROLES:
        (vault / f"{role}.md").write_text(READ_ONLY, encoding="utf-8")
    # One token through the command an operator uses, so its "raw token on the last line" contract holds;
    # it needs no folder, so it is made while the import runs.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending_token = pool.submit(relay.create_token, name="sync-editor", role="edit")
        out = relay.import_vault(vault, folder=FOLDER)
        token = pending_token.result()
    assert f"{3 + len(READ_ONLY_ROLES)} created" in out, out
    assert token.startswith("lr_") and " " not in token
    role_tokens = {role: relay.tokens[role] for role in READ_ONLY_ROLES}
    return Synced(relay=relay, token=token, role_tokens=role_tokens)


async def test_two_clients_sync_a_unicode_edit_and_the_server_has_it(
    synced: Synced, yclients: YClientFactory
) -> None:
    relay, token = synced.relay, synced.token
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Hello.md")
    url, params = relay.doc_url(doc_id), {"token": token}
    alice = await yclients(url, doc_id, params=params, awareness={"user": {"name": "alice"}}, label="alice")
    bob = await yclients(url, doc_id, params=params, awareness={"user": {"name": "bob"}}, label="bob")
    assert await alice.text() == HELLO
    assert await bob.text() == HELLO

    # alice types the Unicode line after the heading (JS indices are UTF-16 code units)
    at = HELLO.index("First")
    await alice.insert(utf16_index(HELLO, at), UNICODE_EDIT + "\n")
    after_alice = HELLO[:at] + UNICODE_EDIT + "\n" + HELLO[at:]
    assert await bob.wait_text(equals=after_alice) == after_alice

    # bob deletes the CJK run, measured in UTF-16 units, right after an astral-plane emoji
    start = after_alice.index("中文字符")
    await bob.delete(utf16_index(after_alice, start), utf16_len("中文字符"))
    final = after_alice.replace("中文字符", "")
    assert await alice.wait_text(equals=final) == final

    # the server's own Doc holds exactly the same text
    server_text = await poll(
        lambda: relay.doc_text(doc_id, token=token), lambda text: text == final, what="server text"
    )
    assert server_text == final

    # awareness: each client sees both users
    for client in (alice, bob):
        states = await client.wait_awareness(2)
        names = sorted(state["user"]["name"] for state in states.values() if state)
        assert names == ["alice", "bob"], states
        assert alice.client_id in states and bob.client_id in states


async def test_a_late_joiner_gets_the_full_text_and_leavers_vanish_from_awareness(
    synced: Synced, yclients: YClientFactory
) -> None:
    relay, token = synced.relay, synced.token
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Late.md")
    url, params = relay.doc_url(doc_id), {"token": token}
    alice = await yclients(url, doc_id, params=params, awareness={"user": {"name": "alice"}}, label="alice")
    bob = await yclients(url, doc_id, params=params, awareness={"user": {"name": "bob"}}, label="bob")
    edits = ["Alpha 😀 ", "Beta 中文 ", "Gamma é "]
    for i, piece in enumerate(edits):
        writer = (alice, bob)[i % 2]
        await writer.insert(utf16_len(await writer.text()), piece)
        expected = LATE + "".join(edits[: i + 1])
        await alice.wait_text(equals=expected)
        await bob.wait_text(equals=expected)
    full = LATE + "".join(edits)

    # carol joins afterwards on the plain /ws/<doc_id> route and gets everything in her first sync
    carol = await yclients(
        f"{relay.server.ws_url}/ws",
        doc_id,
        params=params,
        awareness={"user": {"name": "carol"}},
        report_updates=True,
        label="carol",
    )
    assert await carol.text() == full
    states = await carol.wait_awareness(3)
    assert {alice.client_id, bob.client_id, carol.client_id} <= set(states)

    # alice crashes (no goodbye from her client): the server tells the others she left
    mark = len(carol.events)
    await alice.kill()

    async def carol_sees() -> dict[int, object]:
        return await carol.awareness_states()

    await poll(carol_sees, lambda s: alice.client_id not in s, what="alice removed from awareness")
    await asyncio.sleep(0.3)  # any wrongful removal travels in the same message, or right after it
    # ... and only alice: bob is still connected. (y-protocols re-announces a client whose own state was
    # removed, so a wrongful removal shows up as a removal event, maybe followed by a re-add.)
    removals = [e for e in carol.events_named("awareness", since=mark) if e["removed"]]
    wrongly_removed = {c for e in removals for c in e["removed"]} - {alice.client_id}
    assert not wrongly_removed, (
        f"when alice ({alice.client_id}) left, the server also announced the departure of {wrongly_removed} "
        f"(bob={bob.client_id}, carol={carol.client_id}), still connected: {removals}"
    )
    assert bob.client_id in await carol.awareness_states()
    # and the text is untouched by her departure
    assert await relay.doc_text(doc_id, token=token) == full


async def test_renewals_of_unchanged_presence_travel_together_and_never_revive_a_leaver(
    synced: Synced, yclients: YClientFactory
) -> None:
    """y-protocols clients renew their state every 15 s (same state, newer clock); the server passes a
    room's renewals on in one message a second later, so clients that connected together do not renew
    in a wave of one broadcast each. Nobody times out, and a renewal never brings back someone who left."""
    relay, token = synced.relay, synced.token
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Presence.md")
    url, params = relay.doc_url(doc_id), {"token": token}
    alice, bob, carol = [
        await yclients(url, doc_id, params=params, awareness={"user": {"name": name}}, label=name)
        for name in ("alice", "bob", "carol")
    ]
    for client in (alice, bob, carol):
        await client.wait_awareness(3)
    before, messages_before = await carol.awareness_clocks()

    await alice.renew_awareness()
    await bob.renew_awareness()

    async def carols_clocks() -> tuple[dict[int, int], int]:
        return await carol.awareness_clocks()

    _, messages_after = await poll(
        carols_clocks,
        lambda seen: all(seen[0][c.client_id] > before[c.client_id] for c in (alice, bob)),
        what="carol sees alice's and bob's renewals",
    )
    assert messages_after - messages_before == 1, "both renewals in one message"
    assert set(await carol.awareness_states()) == {alice.client_id, bob.client_id, carol.client_id}

    # alice renews and leaves at once: her goodbye goes out, and the batch a second later leaves her gone
    await alice.renew_awareness()
    await alice.kill()

    async def carols_states() -> dict[int, object]:
        return await carol.awareness_states()

    await poll(carols_states, lambda states: alice.client_id not in states, what="alice removed")
    await asyncio.sleep(1.5)  # past the renewal batch she was part of
    assert set(await carol.awareness_states()) == {bob.client_id, carol.client_id}


@pytest.mark.parametrize("role", READ_ONLY_ROLES)
async def test_a_read_only_token_syncs_but_its_edits_reach_nobody(
    synced: Synced, yclients: YClientFactory, role: str
) -> None:
    relay, token = synced.relay, synced.token
    doc_id = await relay.doc_id(token, folder=FOLDER, path=f"/{role}.md")
    url = relay.doc_url(doc_id)
    editor = await yclients(url, doc_id, params={"token": token}, label="editor")
    reader = await yclients(url, doc_id, params={"token": synced.role_tokens[role]}, label=role)
    assert await reader.text() == READ_ONLY
    # merely syncing (an empty step-2 reply) is not an edit and must not be refused
    assert reader.events_named("permission-denied") == []

    # live updates reach the read-only client
    first = "Live from the editor ✍️ 中文\n"
    await editor.insert(utf16_len(READ_ONLY), first)
    expected = READ_ONLY + first
    assert await reader.wait_text(equals=expected) == expected

    # its own edit is refused ...
    mark = len(reader.events)
    await reader.insert(0, "HACKED 😈 ")
    denied = await reader.wait_event("permission-denied", since=mark)
    assert denied["reason"]
    # ... never reaches the server's Doc ...
    assert await relay.doc_text(doc_id, token=token) == expected
    # ... nor the editor: a later edit of the editor's travels the same way and arrives, the hack does not
    second = "Second edit.\n"
    await editor.insert(utf16_len(expected), second)
    expected += second
    await reader.wait_text(contains=second)
    assert await editor.text() == expected
    # ... nor anyone who joins later
    newcomer = await yclients(url, doc_id, params={"token": token}, label="newcomer")
    assert await newcomer.text() == expected
    assert await relay.doc_text(doc_id, token=token) == expected
    # the reader is told, not thrown out
    assert (await reader.info())["connected"] is True


def var_uint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# y-websocket frames: [message type][sync step][length-prefixed payload]; each of these is broken.
MALFORMED_FRAMES: dict[str, bytes] = {
    "truncated sync update": bytes([0, 2]) + var_uint(40) + b"only a few bytes",
    "truncated sync step 1": bytes([0, 0]) + var_uint(9) + b"\x01",
    "frame ends inside a number": b"\x00\x02\xff\xff",
    "garbage": b"\xff" * 12,
    "unknown sync step": bytes([0, 9]) + var_uint(2) + b"\x00\x00",
    "update that is not Yjs": bytes([0, 2]) + var_uint(8) + b"\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7",
    "awareness state that is not JSON": bytes([1]) + var_uint(7) + bytes([1, 5, 1]) + var_uint(3) + b"{{{",
}


async def assert_refused_for_good(client: YClient, *, code: int, since: int = 0, what: str) -> None:
    """The server closed ``client`` with ``code`` and the y-websocket provider stopped reconnecting."""
    closed = await client.wait_event("closed", since=since, timeout=10.0)
    assert closed["code"] == code, f"{what}: closed with {closed}, wanted {code}"
    info = await client.info()
    assert info["shouldConnect"] is False and info["connected"] is False, f"{what}: {info}"
    reconnects = len(client.events_named("status", since=client.events.index(closed)))
    await asyncio.sleep(0.3)
    assert len(client.events_named("status", since=client.events.index(closed))) == reconnects, (
        f"{what}: the client tried to reconnect after a {code} close"
    )


async def test_malformed_frames_close_4400_and_change_nothing(
    synced: Synced, yclients: YClientFactory
) -> None:
    relay, token = synced.relay, synced.token
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Hello.md")
    url, params = relay.doc_url(doc_id), {"token": token}
    bystander = await yclients(url, doc_id, params=params, label="bystander")
    before = await relay.as_update(doc_id, token=token)

    offender = await yclients(url, doc_id, params=params, label="offender")
    for what, frame in MALFORMED_FRAMES.items():
        mark = len(offender.events)
        await offender.send_raw(frame)
        await assert_refused_for_good(offender, code=4400, since=mark, what=what)
        assert await relay.as_update(doc_id, token=token) == before, f"{what}: the document changed"
        # the same client may come back by an explicit connect (one Node process serves every case)
        await offender.reconnect()
        await offender.wait_synced()

    # the server keeps serving the same document: the bystander's edit reaches a newcomer
    text = await bystander.text()
    await bystander.insert(utf16_len(text), "Still alive ✓\n")
    newcomer = await yclients(url, doc_id, params=params, label="newcomer")
    assert await newcomer.wait_text(equals=text + "Still alive ✓\n")
    assert (await bystander.info())["connected"] is True


async def test_an_oversized_frame_closes_4413(synced: Synced, yclients: YClientFactory) -> None:
    relay, token = synced.relay, synced.token
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Late.md")
    url, params = relay.doc_url(doc_id), {"token": token}
    before = await relay.as_update(doc_id, token=token)
    offender = await yclients(url, doc_id, params=params, label="offender")
    payload = b"\x00" * (MAX_FRAME_BYTES + 1)
    mark = len(offender.events)
    await offender.send_raw(bytes([0, 2]) + var_uint(len(payload)) + payload)
    await assert_refused_for_good(offender, code=4413, since=mark, what="oversized frame")
    assert await relay.as_update(doc_id, token=token) == before
    await yclients(url, doc_id, params=params, label="next")  # and the next client still syncs


async def test_unknown_documents_and_mismatched_ids_are_refused(
    synced: Synced, yclients: YClientFactory
) -> None:
    relay, token = synced.relay, synced.token
    params = {"token": token}
    doc_id = await relay.doc_id(token, folder=FOLDER, path="/Hello.md")
    before = await relay.as_update(doc_id, token=token)
    unknown = "f0a8e1f2-5b7c-4d3e-9a6b-1c2d3e4f5a6b-00000000-0000-4000-8000-000000000000"
    cases = {
        "unknown doc (y-sweet route)": (relay.doc_url(unknown), unknown, 4404),
        "unknown doc (/ws route)": (f"{relay.server.ws_url}/ws", "no-such-document", 4404),
        "room differs from the doc id": (relay.doc_url(doc_id), unknown, 4400),
    }
    started = await asyncio.gather(
        *(
            yclients(url, room, params=params, wait_synced=False, label=what)
            for what, (url, room, _) in cases.items()
        )
    )
    clients = dict(zip(cases, started, strict=True))
    for what, client in clients.items():
        await assert_refused_for_good(client, code=cases[what][2], what=what)
        assert client.events_named("synced") == [], f"{what}: the client was synced"
    assert await relay.as_update(doc_id, token=token) == before
    # the unknown id did not become a document by being asked for
    response = await relay.request("GET", f"/d/{unknown}/as-update", token=token)
    assert response.status_code == 404
