"""The y-websocket / y-sweet sync endpoint. Thin: it authenticates, decodes frames and calls the room.

A Channels consumer like any other (`connect`, `receive`, `disconnect`); the fast path that takes frames
straight from daphne's protocol and writes them straight back is the `DirectFrames` mixin
(lensrelay.sync.fastpath), which hands each frame read that way to `receive_now` first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from lensrelay.access.auth import Access, access_for_user, authenticate_token, token_refusal
from lensrelay.access.client_tokens import ClientTokenRefused, client_token_access, is_client_token
from lensrelay.access.liveaccess import access_watch
from lensrelay.docstore.rehearsal import UpdateDeclined
from lensrelay.docstore.room import EMPTY_UPDATE, Room
from lensrelay.docstore.store import get_store, keep_connection_healthy
from lensrelay.docstore.tombstones import CLOSE_DOCUMENT_PURGED, PURGED_REASON, document_is_purged
from lensrelay.observability import metrics
from lensrelay.protocol import wire
from lensrelay.protocol.awareness import MAX_CLIENTS_PER_CONNECTION, AwarenessRate, AwarenessRefused
from lensrelay.protocol.wire import MalformedFrame, Reader
from lensrelay.sync import subdocs
from lensrelay.sync.authstack import query_token
from lensrelay.sync.fastpath import DirectFrames
from lensrelay.sync.lookups import loop_lookups
from lensrelay.sync.suggesting import Person, suggesting_check, suggesting_person, suggesting_rule
from lensrelay.vault.folders import doc_scope, folder_settled

logger = logging.getLogger(__name__)

# A document id as URLs carry it: the WebSocket routes (lensrelay.routing) and y-sweet's HTTP API.
DOC_ID = r"[A-Za-z0-9_.-]{1,100}"

# Close codes in 4400-4499 tell y-websocket clients not to reconnect.
CLOSE_MALFORMED = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_UNKNOWN_DOC = 4404
CLOSE_TOO_LARGE = 4413

# At most one notice of dropped awareness per this many seconds per connection.
AWARENESS_NOTICE_SECONDS = 10.0

# A client that has just added a filemeta entry may connect to the new content doc before the
# folder change that names it has been mirrored: give the mirror this long before refusing.
UNKNOWN_DOC_GRACE_SECONDS = 2.0


@sync_to_async
def token_access_and_scope(token: str, doc_id: str) -> tuple[Access | None, tuple[bool, int | None]]:
    keep_connection_healthy()
    return authenticate_token(token), doc_scope(doc_id)


@sync_to_async
def client_token_and_scope(token: str, doc_id: str) -> tuple[Access | str, tuple[bool, int | None]]:
    """A y-sweet client token's access on `doc_id` (or the sentence saying why it is refused), and the
    document's scope."""
    keep_connection_healthy()
    try:
        access: Access | str = client_token_access(token, doc_id)
    except ClientTokenRefused as exc:
        access = str(exc)
    return access, doc_scope(doc_id)


@sync_to_async
def _user_access(user: Any) -> Access | None:
    keep_connection_healthy()
    return access_for_user(user)


class SyncConsumer(DirectFrames, AsyncWebsocketConsumer):
    """One y-websocket / y-sweet client on one document's room (the fast path: `lensrelay.sync.fastpath`)."""

    # No channel-layer subscription per socket: documents fan out through the store's one peer bus,
    # and a Redis outage must never close a WebSocket (Channels' receive loop would, with 1011).
    channel_layer_alias = "lensrelay.sync-consumers-use-no-layer"
    room: Room | None = None
    access: Access | None = None
    doc_id: str | None = None
    folder_id: int | None = None
    read_only = True
    # Set while this socket suggests (lensrelay.sync.suggesting): each update is checked before it applies.
    suggesting: Person | None = None
    _author = ""
    awareness_notice_after = 0.0

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.awareness_rate = AwarenessRate()

    async def connect(self) -> None:
        """Accept, authenticate, find the document, join its room and send the first sync step."""
        # Every socket is accepted first: refusals are close codes the client can read.
        await self.accept()
        kwargs = self.scope["url_route"]["kwargs"]
        doc_id = kwargs["doc_id"]
        if kwargs.get("room_id", doc_id) != doc_id:
            await self.close(code=CLOSE_MALFORMED, reason="document ids in the URL differ")
            return
        access, scope = await self._authenticate(doc_id)
        if isinstance(access, str):  # a client token, refused: the sentence says why
            await self.close(code=CLOSE_UNAUTHORIZED, reason=access[:120])
            return
        if access is None:
            # Said only on refusal (one more lookup): token missing, unknown, expired or revoked.
            token = query_token(self.scope)
            if token:
                reason = f"token {await sync_to_async(token_refusal)(token)}"
            elif self._same_origin():  # the admin's session: not staff who may view documents
                reason = "sign in as staff who may view documents"
            else:
                reason = "token missing"
            await self.close(code=CLOSE_UNAUTHORIZED, reason=reason)
            return
        # A document of a folder the token may not see is refused exactly like one that does not exist
        # (same code, same reason, same wait), so ids of other folders cannot be probed.
        visible, folder_id = await self._visible(doc_id, access, first=scope)
        if visible is None:
            await self.close(code=CLOSE_DOCUMENT_PURGED, reason=PURGED_REASON)
            return
        if not visible:
            await self.close(code=CLOSE_UNKNOWN_DOC, reason="unknown document")
            return
        room = await get_store().get(doc_id)
        if room is None:
            await self.close(code=CLOSE_UNKNOWN_DOC, reason="unknown document")
            return
        self.access = access
        self.doc_id, self.folder_id = doc_id, folder_id
        self._take(access)
        self.room = room
        room.join(self)
        metrics.connection_opened()
        access_watch(room.store).add(self)
        await self.send_frame(wire.sync_step1(room.doc.get_state()))
        if len(room.awareness):
            await self.send_frame(wire.awareness_message(room.awareness.encode()))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Handle one client frame: sync, awareness and queries; refuse what the protocol does not allow."""
        if self.room is None:
            return
        if bytes_data is None:
            await self.close(code=CLOSE_MALFORMED, reason="text frames are not part of the protocol")
            return
        limit = settings.LENSRELAY_MAX_FRAME_BYTES
        if len(bytes_data) > limit:
            # The launcher (lensrelay.server.serve) has daphne refuse these before they are even read; this
            # catches them under any other ASGI server.
            await self.close(code=CLOSE_TOO_LARGE, reason=f"frame too large: the limit is {limit} bytes")
            return
        try:
            await self._handle(bytes_data)
        except MalformedFrame as exc:
            logger.info("closing %s: malformed frame (%s)", self.room.doc_id if self.room else "?", exc)
            await self.close(code=CLOSE_MALFORMED, reason=f"malformed frame: {exc}"[:120])

    def receive_now(self, bytes_data: bytes) -> bool:
        """Apply a well-formed sync update from a writer at once; False, changing nothing, for others."""
        # Called for each frame read straight from the protocol (lensrelay.sync.fastpath): `receive` then
        # handles (and refuses, closes or answers) whatever this leaves.
        room = self.room
        if (
            room is None
            or self.read_only
            or self.suggesting
            or len(bytes_data) > settings.LENSRELAY_MAX_FRAME_BYTES
        ):
            return False
        try:
            reader = Reader(bytes_data)
            if reader.var_uint() != wire.MESSAGE_SYNC or reader.var_uint() not in (
                wire.SYNC_STEP2,
                wire.SYNC_UPDATE,
            ):
                return False
            update = reader.var_bytes()
            room.apply_update(update, self)
        except ValueError:  # MalformedFrame or UpdateRefused: nothing was applied
            return False
        metrics.update_received_websocket()
        return True

    async def disconnect(self, code: int) -> None:
        """Leave the room (the client went away)."""
        await self._leave()

    async def _authenticate(self, doc_id: str) -> tuple[Access | str | None, tuple[bool, int | None] | None]:
        """The connection's access, and for a token also the document's scope, looked up in the same
        trip to a thread (each trip costs a few milliseconds of every first sync). A refused client
        token answers the reason instead of an access."""
        token = query_token(self.scope)
        if token and is_client_token(token):
            return await client_token_and_scope(token, doc_id)
        if token:
            answered = loop_lookups.token_and_scope(token, doc_id)
            if answered is None:
                answered = await token_access_and_scope(token, doc_id)
            return answered
        # A browser sends the session cookie to any page's WebSocket: only our own pages may use it.
        if not self._same_origin():
            return None, None
        return await _user_access(self.scope.get("user")), None

    def _same_origin(self) -> bool:
        headers = dict(self.scope.get("headers", []))
        origin = headers.get(b"origin", b"").decode(errors="replace")
        if not origin:
            return True
        host = urlsplit(origin).netloc
        domain, _ = split_domain_port(host)
        return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)

    async def _visible(
        self, doc_id: str, access: Access, *, first: tuple[bool, int | None] | None = None
    ) -> tuple[bool | None, int | None]:
        """Whether the token may open the document (None: it was purged), and the document's folder
        (`first`: the scope already looked up, if it was)."""
        deadline = asyncio.get_running_loop().time() + UNKNOWN_DOC_GRACE_SECONDS
        asked_purged = False
        while True:
            known, folder_id = first if first is not None else await sync_to_async(doc_scope)(doc_id)
            first = None
            if known and access.sees_folder(folder_id):
                return True, folder_id
            if not known and not asked_purged:
                # Said for every token alike: a purged id belongs to no folder any more and holds nothing,
                # and waiting for a mirror to name it is pointless (no entry may name it again).
                asked_purged = True
                if await sync_to_async(document_is_purged)(doc_id):
                    return None, None
            if asyncio.get_running_loop().time() >= deadline:
                return False, None
            await folder_settled()
            await asyncio.sleep(0.1)

    async def _leave(self) -> None:
        room, self.room = self.room, None
        if room is not None:
            metrics.connection_closed()
            access_watch(room.store).discard(self)
            await room.leave(self)

    # -- called by the access watch when the token or user behind this socket changes --------------------

    async def access_lost(self, *, code: int, reason: str) -> None:
        # Leave first: frames still in flight from the client find no room and change nothing.
        self.read_only = True
        await self._leave()
        await self.close(code=code, reason=reason)

    @property
    def author(self) -> str:
        """Who version history names for this socket's edits: its token, grant or staff user."""
        return self._author

    def access_changed(self, access: Access) -> None:
        self.access = access
        self._take(access)

    def _take(self, access: Access) -> None:
        # Worked out once per access, not per update: the label's names are cleaned and composed.
        self._author = access.actor.label
        self.suggesting = suggesting_person(access, self.scope)
        self.read_only = not access.can_write_live and self.suggesting is None

    async def _handle(self, frame: bytes) -> None:
        room = self.room
        assert room is not None
        reader = Reader(frame)
        kind = reader.var_uint()
        if kind == wire.MESSAGE_SYNC:
            step = reader.var_uint()
            payload = reader.var_bytes()
            if step == wire.SYNC_STEP1:
                await self._answer_step1(room, payload)
            elif step in (wire.SYNC_STEP2, wire.SYNC_UPDATE):
                await self._apply(room, payload)
            else:
                raise MalformedFrame(f"unknown sync step {step}")
        elif kind == wire.MESSAGE_AWARENESS:
            await self._awareness(room, reader.var_bytes())
        elif kind == wire.MESSAGE_QUERY_AWARENESS:
            await self.send_frame(wire.awareness_message(room.awareness.encode()))
        elif kind == wire.MESSAGE_SYNC_STATUS:
            await self.send_frame(frame)
        elif kind == wire.MESSAGE_QUERY_SUBDOCS:
            doc_ids = subdocs.read_query(reader)
            body = await subdocs.answer(room=room, folder_id=self.folder_id, doc_ids=doc_ids)
            await self.send_frame(wire.subdocs_message(body))
        # Other message types (auth from a client, custom extensions) carry nothing for the server.

    async def _awareness(self, room: Room, update: bytes) -> None:
        owned = room.clients.setdefault(self, set())
        try:
            received = room.awareness.receive(
                update, may_add=MAX_CLIENTS_PER_CONNECTION - len(owned), rate=self.awareness_rate
            )
        except AwarenessRefused as exc:
            await self._awareness_refused(str(exc))
            return
        if not received.changed:
            return  # a relay of states everyone already has
        owned.update(received.added)
        for peer_ids in room.clients.values():
            peer_ids.difference_update(received.removed)
        if received.renewed:
            room.renew_awareness(received.renewed)
            return
        # Echo to everyone on every worker, the sender included: y-websocket clients drop silent connections.
        await room.share_awareness(update)

    async def _awareness_refused(self, reason: str) -> None:
        # Presence is best effort: the sync goes on; the client's log says why its state was dropped.
        now = asyncio.get_running_loop().time()
        if now >= self.awareness_notice_after:
            self.awareness_notice_after = now + AWARENESS_NOTICE_SECONDS
            await self.send_frame(wire.permission_denied(reason))

    async def _answer_step1(self, room: Room, state_vector: bytes) -> None:
        # Nobody may see a change before it is durable, a new joiner included.
        await room.flushed()
        try:
            update = room.state_update(state_vector)
        except ValueError as exc:
            raise MalformedFrame("state vector does not decode") from exc
        await self.send_frame(wire.sync_step2(update))

    async def _apply(self, room: Room, update: bytes) -> None:
        if self.read_only:
            if update != EMPTY_UPDATE:
                # Only the sender hears about it; the Doc and the other clients never see the change.
                await self.send_frame(wire.permission_denied("read-only access: update not applied"))
            return
        person = self.suggesting
        if person is not None and update == EMPTY_UPDATE:
            return  # a client's first sync step 2 with nothing in it
        if person is not None and room.kind != "content":
            # Folder documents hold the tree: a person suggests in notes only.
            await self.send_frame(wire.permission_denied("suggesting mode: only notes take suggestions"))
            return
        try:
            room.apply_update(update, self, check=None if person is None else suggesting_check(person))
        except UpdateDeclined as exc:
            # Nothing applied; the editor shows why and syncs again (a raw client keeps its own copy).
            await self.send_frame(wire.permission_denied(f"suggesting mode: {exc}"))
            return
        except ValueError as exc:  # UpdateRefused: nothing of it was applied
            raise MalformedFrame("update refused, nothing applied") from exc
        metrics.update_received_websocket()
        if person is not None:
            suggesting_rule().suggested(room, person)
