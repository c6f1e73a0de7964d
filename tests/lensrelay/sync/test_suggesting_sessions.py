"""Sockets in suggesting mode: a person who may only suggest (or an editor who asks) changes nothing but
their own marks; anything else is refused, said to the socket, and leaves the note and its rows alone."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from pycrdt import Array, Doc, Map, Text

from lensrelay.protocol import wire
from lensrelay.routing import websocket_urlpatterns
from lensrelay.vault.documents import document_create, document_text
from suggestions.models import Suggestion
from tests.lensrelay.sync.test_consumer import decode, edit, handshake
from tests.lensrelay.sync.test_staff_rights import OUR_PAGE, _staff

pytestmark = pytest.mark.django_db(transaction=True)

ORIGINAL = "The fox jumps."
UID = "0123456789abcdef"


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text=ORIGINAL)


def meta(user: User, uid: str = UID) -> str:
    fields = {"author": user.get_username(), "timestamp": 1700000000000, "id": uid, "user": user.pk}
    return json.dumps(fields, separators=(",", ":")) + "@@"


async def open_as(user: Any, doc_id: str, *, query: str = "") -> WebsocketCommunicator:
    path = f"/ws/{doc_id}" + (f"?{query}" if query else "")
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path, headers=[(b"origin", OUR_PAGE)])
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    return comm


async def answer(comm: WebsocketCommunicator, update: bytes) -> str | None:
    """Send an update; the refusal the server says, or None when it says nothing (applied)."""
    await comm.send_to(bytes_data=wire.sync_update(update))
    if await comm.receive_nothing(timeout=0.3):
        return None
    kind, _, payload = decode(await comm.receive_from(timeout=5))
    assert kind == wire.MESSAGE_AUTH
    return payload.decode()


async def text_becomes(store: Any, doc_id: str, expected: str) -> None:
    for _ in range(100):
        if await document_text(store=store, doc_id=doc_id) == expected:
            return
        await asyncio.sleep(0.02)
    assert await document_text(store=store, doc_id=doc_id) == expected


async def row_of(uid: str) -> Suggestion:
    for _ in range(150):
        row = await Suggestion.objects.filter(uid=uid).afirst()
        if row is not None:
            return row
        await asyncio.sleep(0.02)
    raise AssertionError(f"no row for {uid}")


async def suggester() -> User:
    return await sync_to_async(_staff)("sam", "view_document", "suggest")


async def test_a_suggest_only_person_cannot_type_plain_text(store: Any, note: Any) -> None:
    sam = await suggester()
    comm = await open_as(sam, note.doc_id)
    client = await handshake(comm)
    reason = await answer(comm, edit(client, 0, "Hi. "))
    assert reason is not None and reason.startswith("suggesting mode:") and "text itself" in reason
    await asyncio.sleep(0.1)
    assert await document_text(store=store, doc_id=note.doc_id) == ORIGINAL
    assert not await Suggestion.objects.aexists()
    await comm.disconnect()


async def test_their_insertion_applies_and_becomes_their_row(store: Any, note: Any) -> None:
    sam = await suggester()
    comm = await open_as(sam, note.doc_id)
    client = await handshake(comm)
    mark = f"{{++{meta(sam)} brown++}}"
    assert await answer(comm, edit(client, 7, mark)) is None
    await text_becomes(store, note.doc_id, f"The fox{mark} jumps.")
    row = await row_of(UID)
    assert (row.person_id, row.author, row.token_id, row.tool) == (sam.pk, "sam", None, "suggesting")
    assert (row.status, row.new_text, row.markup, row.path) == ("pending", " brown", mark, "Lens/Note.md")
    assert [h["new"] for h in row.hunks] == [" brown"]

    # Typing on inside it extends the same suggestion; its row catches up, it is not stale.
    assert await answer(comm, edit(client, 7 + len(mark) - 3, "ish")) is None
    for _ in range(150):
        await row.arefresh_from_db()
        if row.new_text == " brownish":
            break
        await asyncio.sleep(0.02)
    assert (row.status, row.new_text, [h["new"] for h in row.hunks]) == (
        "pending",
        " brownish",
        [" brownish"],
    )
    assert await Suggestion.objects.acount() == 1
    await comm.disconnect()


async def test_another_authors_mark_cannot_be_touched(store: Any, note: Any) -> None:
    ana = await sync_to_async(_staff)("ana", "view_document", "suggest")
    sam = await suggester()
    theirs = f"{{++{meta(ana, 'fedcba9876543210')}quick ++}}"
    writer = await sync_to_async(_staff)("ed", "edit_live")
    comm = await open_as(writer, note.doc_id)
    client = await handshake(comm)
    assert await answer(comm, edit(client, 4, theirs)) is None
    await comm.disconnect()
    expected = f"The {theirs}fox jumps."
    await text_becomes(store, note.doc_id, expected)

    comm = await open_as(sam, note.doc_id)
    client = await handshake(comm)
    inside = expected.index("quick") + 2
    reason = await answer(comm, edit(client, inside, "XX"))
    assert reason is not None and "someone else's" in reason
    await comm.disconnect()
    # Forging the other person's id in a new mark is the same refusal.
    comm = await open_as(sam, note.doc_id)
    client = await handshake(comm)
    forged = f"{{--{meta(ana, '1111111111111111')}jumps--}}"
    reason = await answer(comm, _wrap(client, expected, "jumps", forged))
    assert reason is not None and "someone else's" in reason
    await asyncio.sleep(0.1)
    assert await document_text(store=store, doc_id=note.doc_id) == expected
    await comm.disconnect()


def _wrap(client: Doc, current: str, word: str, mark: str) -> bytes:
    """The update that replaces ``word`` by ``mark`` in the client's text."""
    before = client.get_state()
    ytext = client.get("contents", type=Text)
    start = len(current[: current.index(word)].encode())
    del ytext[start : start + len(word.encode())]
    ytext.insert(start, mark)
    return client.get_update(before)


async def test_an_editor_suggests_only_when_asked(store: Any, note: Any) -> None:
    writer = await sync_to_async(_staff)("ed", "edit_live")
    comm = await open_as(writer, note.doc_id, query="suggesting=1")
    client = await handshake(comm)
    reason = await answer(comm, edit(client, 0, "Hi. "))
    assert reason is not None and "text itself" in reason
    await comm.disconnect()
    comm = await open_as(writer, note.doc_id)
    client = await handshake(comm)
    assert await answer(comm, edit(client, 0, "Hi. ")) is None
    await text_becomes(store, note.doc_id, "Hi. " + ORIGINAL)
    await comm.disconnect()


async def test_a_reader_cannot_suggest_by_asking(store: Any, note: Any) -> None:
    reader = await sync_to_async(_staff)("rita", "view_document")
    comm = await open_as(reader, note.doc_id, query="suggesting=1")
    client = await handshake(comm)
    reason = await answer(comm, edit(client, 7, f"{{++{meta(reader)} brown++}}"))
    assert reason is not None and "read-only" in reason
    await asyncio.sleep(0.1)
    assert await document_text(store=store, doc_id=note.doc_id) == ORIGINAL
    await comm.disconnect()


async def test_nothing_but_the_text_may_change(store: Any, note: Any) -> None:
    sam = await suggester()
    comm = await open_as(sam, note.doc_id)
    client = await handshake(comm)
    before = client.get_state()
    client.get("frontmatter", type=Map)["title"] = "Mine"
    reason = await answer(comm, client.get_update(before))
    assert reason is not None and "only the note's text" in reason
    other = Doc()
    other.get("secrets", type=Text).insert(0, "x")
    reason = await answer(comm, other.get_update())
    assert reason is not None and "only the note's text" in reason
    await comm.disconnect()


async def test_they_name_their_own_client_in_users_and_no_one_elses(store: Any, note: Any) -> None:
    """The editor registers its Yjs client id under the person's name (PermanentUserData), so others can
    tell who wrote what; another's entry, or anything but ids and deletions, is refused whole."""
    sam = await suggester()
    comm = await open_as(sam, note.doc_id)
    client = await handshake(comm)

    def entry(name: str, ids: list[Any], ds: list[bytes] | None = None) -> bytes:
        before = client.get_state()
        client.get("users", type=Map)[name] = Map({"ids": Array(ids), "ds": Array(ds or [])})
        return client.get_update(before)

    # a deletion set as Yjs's PermanentUserData records one (a Uint8Array)
    deleted = b"\x01\x05\x01\x04\x02"
    assert await answer(comm, entry("sam", [float(client.client_id)], [deleted])) is None
    room = await store.get(note.doc_id)
    for _ in range(50):
        if "sam" in room.doc.get("users", type=Map).to_py():
            break
        await asyncio.sleep(0.02)
    assert room.doc.get("users", type=Map).to_py() == {
        "sam": {"ids": [float(client.client_id)], "ds": [deleted]}
    }
    # posing as someone else, and smuggling text into one's own entry, are refused
    for name, ids, why in (("rita", [1.0], "only your own entry"), ("sam", ["<script>"], "only client ids")):
        fresh = await open_as(sam, note.doc_id)
        client = await handshake(fresh)
        reason = await answer(fresh, entry(name, ids))
        assert reason is not None and why in reason, reason
        await fresh.disconnect()
    await asyncio.sleep(0.1)
    users = room.doc.get("users", type=Map).to_py()
    assert set(users) == {"sam"} and len(users["sam"]["ids"]) == 1 and "<script>" not in str(users)
    await comm.disconnect()


async def test_a_suggest_token_still_syncs_read_only(store: Any, note: Any, make_token: Any) -> None:
    # Assistants suggest over MCP: a token's socket never suggests, whatever it asks.
    raw = await sync_to_async(make_token)(role="suggest", name="bot")
    comm = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/{note.doc_id}?token={raw}&suggesting=1"
    )
    connected, _ = await comm.connect()
    assert connected
    client = await handshake(comm)
    mark = '{++{"author":"bot","timestamp":1,"id":"0123456789abcdef","user":1}@@ x++}'
    reason = await answer(comm, edit(client, 7, mark))
    assert reason is not None and "read-only" in reason
    await comm.disconnect()
