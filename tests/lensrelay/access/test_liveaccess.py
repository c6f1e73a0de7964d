"""Open sockets follow their token or staff user: revoked, expired or narrowed access cuts them off.

Unit level, with Channels' WebsocketCommunicator against the real consumer and store; the token changes
go through the services the admin uses (and one straight through the ORM, as a script might, to show the
check reads the database rather than trusting a signal).
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from lensrelay.access.auth import access_for_user
from lensrelay.access.liveaccess import AccessWatch, access_watch, current_access, folders_of
from lensrelay.access.tokens import (
    token_create,
    token_revoke,
    token_set_folders,
    token_update,
)
from lensrelay.asgi import application
from lensrelay.models import ApiToken, Document, Folder
from lensrelay.protocol import wire
from lensrelay.routing import websocket_urlpatterns
from lensrelay.vault.documents import document_create, document_text
from tests.lensrelay.sync.test_consumer import decode, edit, handshake

pytestmark = pytest.mark.django_db(transaction=True)

# The poll runs every LENSRELAY_POLL_SECONDS (0.5 s by default): a change must bite within a second.
CUT_OFF_SECONDS = 1.0


@pytest.fixture
async def docs(store: Any, make_folder: Any) -> dict[str, Any]:
    public = await sync_to_async(make_folder)("Public")
    secret = await sync_to_async(make_folder)("Secret")
    return {
        "public": await document_create(store=store, folder=public, path="/Open.md", text="open"),
        "secret": await document_create(store=store, folder=secret, path="/Hidden.md", text="hidden"),
        "folders": {"Public": public, "Secret": secret},
    }


def new_token(role: str, *folders: Folder) -> tuple[ApiToken, str]:
    return token_create(name=f"{role}-token", role=role, folders=folders)


async def open_socket(doc_id: str, raw: str) -> tuple[WebsocketCommunicator, Any]:
    comm = WebsocketCommunicator(application, f"/d/{doc_id}/ws/{doc_id}?token={raw}")
    connected, _ = await comm.connect()
    assert connected
    return comm, await handshake(comm)


async def closed_within(comm: WebsocketCommunicator, seconds: float) -> tuple[int, float]:
    """The close code the socket gets, and how long after the call it came."""
    started = time.monotonic()
    while True:
        remaining = seconds + 1.0 - (time.monotonic() - started)
        message = await comm.receive_output(timeout=max(remaining, 0.01))
        if message["type"] == "websocket.close":
            return message["code"], time.monotonic() - started


async def test_revoking_closes_open_sockets_4401_within_a_second(store: Any, docs: Any) -> None:
    token, raw = await sync_to_async(new_token)("edit")
    sockets = [await open_socket(docs["public"].doc_id, raw), await open_socket(docs["secret"].doc_id, raw)]
    await sync_to_async(token_revoke)(token=token)
    for comm, _ in sockets:
        code, after = await closed_within(comm, CUT_OFF_SECONDS)
        assert code == 4401 and after <= CUT_OFF_SECONDS, (code, after)
    # what the client still sends after the cut is never applied
    comm, client = sockets[0]
    await comm.send_to(bytes_data=wire.sync_update(edit(client, 0, "LATE ")))
    await asyncio.sleep(0.2)
    assert await document_text(store=store, doc_id=docs["public"].doc_id) == "open"
    assert not access_watch(store).sockets


async def test_expiry_closes_open_sockets_even_when_set_straight_in_the_database(
    store: Any, docs: Any
) -> None:
    token, raw = await sync_to_async(new_token)("view")
    comm, _ = await open_socket(docs["public"].doc_id, raw)
    expired = timezone.now() - timedelta(seconds=1)
    await ApiToken.objects.filter(pk=token.pk).aupdate(expires_at=expired)
    code, after = await closed_within(comm, CUT_OFF_SECONDS)
    assert code == 4401 and after <= CUT_OFF_SECONDS


async def test_narrowing_closes_sockets_on_lost_folders_4403_and_keeps_the_rest(
    store: Any, docs: Any
) -> None:
    public, secret = docs["folders"]["Public"], docs["folders"]["Secret"]
    token, raw = await sync_to_async(new_token)("edit", public, secret)
    kept, kept_client = await open_socket(docs["public"].doc_id, raw)
    lost, _ = await open_socket(docs["secret"].doc_id, raw)
    assert await sync_to_async(token_set_folders)(token=token, folders=[public])
    code, after = await closed_within(lost, CUT_OFF_SECONDS)
    assert code == 4403 and after <= CUT_OFF_SECONDS
    # the socket on the folder it kept still writes
    await asyncio.sleep(0.6)
    await kept.send_to(bytes_data=wire.sync_update(edit(kept_client, 0, "still ")))
    for _ in range(50):
        if await document_text(store=store, doc_id=docs["public"].doc_id) == "still open":
            break
        await asyncio.sleep(0.02)
    assert await document_text(store=store, doc_id=docs["public"].doc_id) == "still open"
    await kept.disconnect()


async def test_narrowing_an_every_folder_token_to_one_folder_closes_the_others(store: Any, docs: Any) -> None:
    token, raw = await sync_to_async(new_token)("view")
    lost, _ = await open_socket(docs["secret"].doc_id, raw)
    await sync_to_async(token_set_folders)(token=token, folders=[docs["folders"]["Public"]])
    code, _ = await closed_within(lost, CUT_OFF_SECONDS)
    assert code == 4403


async def test_a_lowered_role_turns_an_open_socket_read_only(store: Any, docs: Any) -> None:
    token, raw = await sync_to_async(new_token)("edit")
    comm, client = await open_socket(docs["public"].doc_id, raw)
    await sync_to_async(token_update)(token=token, name=token.name, role="view", expires_at=None)
    await asyncio.sleep(CUT_OFF_SECONDS)
    await comm.send_to(bytes_data=wire.sync_update(edit(client, 0, "EVIL ")))
    kind, _, reason = decode(await comm.receive_from(timeout=5))
    assert kind == wire.MESSAGE_AUTH and b"read-only" in reason
    assert await document_text(store=store, doc_id=docs["public"].doc_id) == "open"
    await comm.disconnect()


async def test_staff_sockets_follow_the_user(store: Any, docs: Any) -> None:
    def make_staff() -> User:
        user = User.objects.create_user("stella", password="pw", is_staff=True)
        user.user_permissions.set(Permission.objects.filter(codename__in=["edit_live", "view_document"]))
        return User.objects.get(pk=user.pk)

    user = await sync_to_async(make_staff)()
    router = URLRouter(websocket_urlpatterns)
    comm = WebsocketCommunicator(
        router, f"/ws/{docs['public'].doc_id}", headers=[(b"origin", b"http://localhost:8000")]
    )
    comm.scope["user"] = user
    assert (await comm.connect())[0]
    client = await handshake(comm)

    def lose(codename: str) -> None:
        user.user_permissions.remove(Permission.objects.get(codename=codename))

    await sync_to_async(lose)("edit_live")  # loses "Can edit documents live"
    await asyncio.sleep(CUT_OFF_SECONDS)
    await comm.send_to(bytes_data=wire.sync_update(edit(client, 0, "EVIL ")))
    kind, _, _ = decode(await comm.receive_from(timeout=5))
    assert kind == wire.MESSAGE_AUTH
    assert await document_text(store=store, doc_id=docs["public"].doc_id) == "open"

    await sync_to_async(lose)("view_document")  # may no longer read documents: cut off
    code, after = await closed_within(comm, CUT_OFF_SECONDS)
    assert code == 4401 and after <= CUT_OFF_SECONDS

    # A deactivated person is cut off too.
    comm = WebsocketCommunicator(
        router, f"/ws/{docs['public'].doc_id}", headers=[(b"origin", b"http://localhost:8000")]
    )
    await sync_to_async(lambda: user.user_permissions.add(Permission.objects.get(codename="view_document")))()
    comm.scope["user"] = await User.objects.aget(pk=user.pk)
    assert (await comm.connect())[0]
    await handshake(comm)
    await User.objects.filter(pk=user.pk).aupdate(is_active=False)
    code, after = await closed_within(comm, CUT_OFF_SECONDS)
    assert code == 4401 and after <= CUT_OFF_SECONDS


async def test_the_watch_stops_polling_when_no_socket_is_open(store: Any, docs: Any) -> None:
    _, raw = await sync_to_async(new_token)("view")
    comm, _ = await open_socket(docs["public"].doc_id, raw)
    watch = access_watch(store)
    assert len(watch.sockets) == 1 and watch._task is not None and not watch._task.done()
    await comm.disconnect()
    await asyncio.sleep(store.poll_seconds * 2 + 0.2)
    assert not watch.sockets and watch._task.done()


async def test_a_document_moved_to_a_folder_the_token_does_not_see_closes_its_sockets(
    store: Any, docs: Any
) -> None:
    public, secret = docs["folders"]["Public"], docs["folders"]["Secret"]
    _, raw = await sync_to_async(new_token)("view", public)
    comm, _ = await open_socket(docs["public"].doc_id, raw)
    await Document.objects.filter(doc_id=docs["public"].doc_id).aupdate(folder=secret)
    code, after = await closed_within(comm, CUT_OFF_SECONDS)
    assert code == 4403 and after <= CUT_OFF_SECONDS


async def test_folders_of_reads_notes_and_folder_documents_in_one_statement_bound_on_postgresql(
    store: Any, docs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch's read of where the open documents are: a note's folder, a folder document's own folder,
    nothing for unknown ids; ids are parameters, never SQL (quotes, wildcards and a NUL-free injection
    attempt read nothing and change nothing); on PostgreSQL no client-side cursor quotes them."""
    import psycopg
    from django.db import connection

    public, secret = docs["folders"]["Public"], docs["folders"]["Secret"]
    # An id the URLs never carry, stored all the same: quotes, a backslash, braces and a comma are data.
    odd = await Document.objects.acreate(folder=secret, uuid="u-odd", doc_id='we"ird\\id,{x}', path="/Odd.md")
    hostile = ["x' OR '1'='1", "%", "_", "'); DELETE FROM lensrelay_document; --", "a" * 5000, "we", "{x}"]
    wanted = [
        docs["public"].doc_id,
        docs["secret"].doc_id,
        public.doc_id,
        odd.doc_id,
        "no-such-doc",
        *hostile,
    ]

    def client_side(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a client-side cursor was used")

    def read() -> dict[str, int]:
        connection.ensure_connection()  # a new connection's own setup goes through Django's cursors
        if connection.vendor == "postgresql":
            monkeypatch.setattr(psycopg.ClientCursor, "execute", client_side)
        try:
            return folders_of(wanted)
        finally:
            monkeypatch.undo()

    assert await sync_to_async(read)() == {
        docs["public"].doc_id: public.pk,
        docs["secret"].doc_id: secret.pk,
        public.doc_id: public.pk,
        odd.doc_id: secret.pk,
    }
    assert await Document.objects.acount() == 3
    assert await sync_to_async(folders_of)([]) == {}
    # More open documents than a default SQLite build binds to one statement: read in chunks, none lost.
    many = [f"unknown-{n}" for n in range(20_000)] + [docs["public"].doc_id]
    assert await sync_to_async(folders_of)(many) == {docs["public"].doc_id: public.pk}


class FakeSocket:
    """A watched socket that records what the watch did to it."""

    def __init__(self, access: Any, doc_id: str) -> None:
        self.access = access
        self.doc_id: str | None = doc_id
        self.folder_id: int | None = None
        self.lost: list[int] = []

    async def access_lost(self, *, code: int, reason: str) -> None:
        self.lost.append(code)

    def access_changed(self, access: Any) -> None:
        self.access = access


async def test_a_check_that_reads_nothing_new_looks_only_at_sockets_added_since(
    store: Any, docs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "poll_seconds", 3600.0)  # the test runs every check itself
    token, _ = await sync_to_async(new_token)("edit")
    access = (await sync_to_async(current_access)([("token", token.pk)]))[("token", token.pk)]
    watch = AccessWatch(store)
    doc_id, folder_id = docs["public"].doc_id, docs["folders"]["Public"].pk
    first = [FakeSocket(access, doc_id) for _ in range(2)]
    for socket in first:
        watch.add(socket)
    await watch.check()
    assert [s.folder_id for s in first] == [folder_id, folder_id]

    # The check sets each socket's folder it looks at: a stale mark shows which ones it skipped.
    for socket in first:
        socket.folder_id = -1
    late = FakeSocket(access, doc_id)
    late.folder_id = -1
    watch.add(late)
    await watch.check()
    assert [s.folder_id for s in first] == [-1, -1] and late.folder_id == folder_id

    # A change read from the database walks every socket again.
    await sync_to_async(token_revoke)(token=token)
    await watch.check()
    assert [s.lost for s in [*first, late]] == [[4401]] * 3 and not watch.sockets


async def test_a_socket_that_joins_while_a_check_reads_is_left_for_the_next_check(
    store: Any, docs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A staff user who opens the editor while the watch is reading the others' credentials keeps the
    socket: the read did not cover that user, which is no sign the user lost access."""
    monkeypatch.setattr(store, "poll_seconds", 3600.0)  # the test runs every check itself

    def make_staff(name: str) -> Any:
        user = User.objects.create_user(name, password="pw", is_staff=True)
        user.user_permissions.set(Permission.objects.filter(codename="view_document"))
        return access_for_user(User.objects.get(pk=user.pk))

    ann, bob = [await sync_to_async(make_staff)(name) for name in ("ann", "bob")]
    doc_id = docs["public"].doc_id
    watch = AccessWatch(store)
    first = FakeSocket(ann, doc_id)
    watch.add(first)
    await watch.check()

    def let_ann_edit_live() -> None:  # a change the next read sees, so that it walks every socket
        User.objects.get(username="ann").user_permissions.add(Permission.objects.get(codename="edit_live"))

    await sync_to_async(let_ann_edit_live)()

    late = FakeSocket(bob, doc_id)
    real_db = store.db

    async def db_while_bob_joins(fn: Any, *args: Any) -> Any:
        watch.add(late)  # bob's editor connects while the read is under way
        return await real_db(fn, *args)

    monkeypatch.setattr(store, "db", db_while_bob_joins)
    await watch.check()
    monkeypatch.setattr(store, "db", real_db)
    assert late.lost == [] and late in watch.sockets
    assert first.access is not None and first.access.can_write_live  # the walk did happen
    # The next check reads bob's credential and looks at his socket.
    late.folder_id = -1
    await watch.check()
    assert late.lost == [] and late.folder_id == docs["folders"]["Public"].pk

    # And one who really loses access is still cut off.
    await User.objects.filter(username="bob").aupdate(is_staff=False)
    await watch.check()
    assert late.lost == [4401] and first.lost == []


async def test_a_check_reads_the_credentials_and_documents_of_the_open_sockets_only(
    store: Any, docs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted as sockets come and go, not walked at each check: a socket added twice counts once, and what
    the last socket of a credential or a document took away is no longer read."""
    monkeypatch.setattr(store, "poll_seconds", 3600.0)  # the test runs every check itself
    tokens = [(await sync_to_async(new_token)("edit"))[0] for _ in range(2)]
    accesses = await sync_to_async(current_access)([("token", t.pk) for t in tokens])
    one, two = (accesses[("token", t.pk)] for t in tokens)
    public, private = docs["public"].doc_id, docs["secret"].doc_id
    watch = AccessWatch(store)
    read: list[tuple[set[Any], set[str]]] = []
    real_db = store.db

    async def recording_db(fn: Any, *args: Any) -> Any:
        if fn.__name__ == "_current":  # the watch's read (the store has other work meanwhile)
            read.append((set(args[0]), set(args[1])))
        return await real_db(fn, *args)

    monkeypatch.setattr(store, "db", recording_db)
    a, b, c = FakeSocket(one, public), FakeSocket(one, private), FakeSocket(two, public)
    for socket in (a, b, c, a):
        watch.add(socket)
    await watch.check()
    assert read[-1] == ({("token", tokens[0].pk), ("token", tokens[1].pk)}, {public, private})
    watch.discard(b)
    watch.discard(b)
    await watch.check()
    assert read[-1] == ({("token", tokens[0].pk), ("token", tokens[1].pk)}, {public})
    watch.discard(a)
    await watch.check()
    assert read[-1] == ({("token", tokens[1].pk)}, {public})
    # A socket cut off by the check leaves the counts too.
    await sync_to_async(token_revoke)(token=tokens[1])
    await watch.check()
    assert c.lost == [4401] and not watch.sockets
    watch.add(a)
    await watch.check()
    assert read[-1] == ({("token", tokens[0].pk)}, {public})
