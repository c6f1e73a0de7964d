"""Staff in the admin sync read-write only with "Can edit documents live" (superusers have it), and read
only with the right to view documents.

Browsing the admin (is_staff) and reviewing suggestions are separate rights: without the live-edit
permission a staff member's updates are refused like a view token's, so nobody can decide a suggestion
by editing its markup away without a right that says so; without the right to view documents a staff
member's socket reads nothing at all (the sixth finding of the third trust round: two frames were enough).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User

from lensrelay.access.auth import access_for_user
from lensrelay.protocol import wire
from lensrelay.routing import websocket_urlpatterns
from lensrelay.vault.documents import document_create, document_text
from tests.lensrelay.sync.test_consumer import decode, edit, handshake

pytestmark = pytest.mark.django_db(transaction=True)

ORIGINAL = "héllo 😀 中"
OUR_PAGE = b"http://localhost:8000"


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text=ORIGINAL)


def _staff(username: str, *codenames: str, superuser: bool = False) -> User:
    if superuser:
        return User.objects.create_superuser(username, f"{username}@example.org", "pw")
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # a fresh object: no cached permissions


async def open_as(user: Any, doc_id: str) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/{doc_id}", headers=[(b"origin", OUR_PAGE)]
    )
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    return comm


async def try_to_write(comm: WebsocketCommunicator, value: str) -> tuple[int, bytes]:
    """Sync, send an insertion; returns the first frame the server answers with (or a no-answer marker)."""
    client = await handshake(comm)
    await comm.send_to(bytes_data=wire.sync_update(edit(client, 0, value)))
    if await comm.receive_nothing(timeout=0.3):
        return -1, b""
    kind, _, payload = decode(await comm.receive_from(timeout=5))
    return kind, payload


@pytest.mark.parametrize(
    "codenames",
    [
        ("view_document", "view_suggestion"),
        ("view_document", "review_suggestion", "view_suggestion"),
        ("change_document", "change_folder", "change_apitoken", "add_apitoken"),
    ],
    ids=["browse", "review", "other-admin-rights"],
)
async def test_staff_without_the_live_edit_permission_sync_read_only(
    store: Any, note: Any, codenames: tuple[str, ...]
) -> None:
    user = await sync_to_async(_staff)("stella", *codenames)
    comm = await open_as(user, note.doc_id)
    kind, reason = await try_to_write(comm, "STAFF WROTE ")
    assert kind == wire.MESSAGE_AUTH and b"read-only" in reason
    await asyncio.sleep(0.1)
    assert await document_text(store=store, doc_id=note.doc_id) == ORIGINAL
    await comm.disconnect()


@pytest.mark.parametrize("superuser", [False, True], ids=["granted", "superuser"])
async def test_staff_with_the_live_edit_permission_write(store: Any, note: Any, superuser: bool) -> None:
    user = await sync_to_async(_staff)("ed", "edit_live", superuser=superuser)
    comm = await open_as(user, note.doc_id)
    kind, _ = await try_to_write(comm, "staff ")
    assert kind == -1  # no refusal
    for _ in range(50):
        if await document_text(store=store, doc_id=note.doc_id) == "staff " + ORIGINAL:
            break
        await asyncio.sleep(0.02)
    assert await document_text(store=store, doc_id=note.doc_id) == "staff " + ORIGINAL
    await comm.disconnect()


@pytest.mark.parametrize(
    "codenames",
    [(), ("review_suggestion", "view_suggestion"), ("view_folder", "view_apitoken", "view_webhookendpoint")],
    ids=["no-permission", "review-only", "other-views"],
)
async def test_staff_who_may_not_view_documents_read_nothing(
    store: Any, note: Any, codenames: tuple[str, ...]
) -> None:
    user = await sync_to_async(_staff)("stella", *codenames)
    comm = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/{note.doc_id}", headers=[(b"origin", OUR_PAGE)]
    )
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected  # accepted, then closed with a code that stops reconnects
    # The two frames of the attack: a sync step 1 (and awareness) ask for the note's state.
    await comm.send_to(bytes_data=wire.sync_step1(b"\x00"))
    frames = []
    while True:
        output = await comm.receive_output(timeout=5)
        if output["type"] == "websocket.close":
            break
        frames.append(output.get("bytes") or b"")
    assert output["code"] == 4401 and "view documents" in output.get("reason", "")
    assert not any(ORIGINAL.encode() in frame for frame in frames)
    assert all(decode(frame)[0] != wire.MESSAGE_SYNC for frame in frames if frame)


def test_access_for_user_maps_rights_to_roles(transactional_db: None) -> None:
    gone = _staff("gone", "edit_live")
    gone.is_active = False
    roles = {
        name: (access.role if (access := access_for_user(user)) is not None else None)
        for name, user in {
            "reader": _staff("reader", "view_document"),
            "staff": _staff("staff", "view_suggestion", "review_suggestion"),
            "writer": _staff("writer", "edit_live"),
            "suggester": _staff("suggester", "view_document", "suggest"),
            "root": _staff("root", superuser=True),
            "plain": User.objects.create_user("plain", password="pw"),
            "gone": gone,
            "nobody": None,
        }.items()
    }
    assert roles == {
        "reader": "view",
        "staff": None,
        "writer": "edit",
        "suggester": "suggest",
        "root": "edit",
        "plain": None,
        "gone": None,
        "nobody": None,
    }
