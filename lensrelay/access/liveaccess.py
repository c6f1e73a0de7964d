"""Open sockets follow their credentials: revoking, expiring or narrowing a token cuts them off.

A socket's access is checked once when it connects; after that this per-process registry re-reads the
tokens (and staff users) behind every open socket, and the folders of their documents, every
`LENSRELAY_POLL_SECONDS`, in a few cheap queries, only while sockets are open. It needs nothing but the
database, so it works the same on every worker, whichever process or command changed the token. A
socket whose token is revoked, expired or deleted closes with 4401; one whose token lost the document's
folder (or whose document moved to a folder the token does not see) closes with 4403; a token whose role
changed keeps its socket with the new rights (an `edit` token narrowed to `view` turns read-only).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol

from django.contrib.auth import get_user_model
from django.db import connection

from lensrelay.access.auth import Access, access_for_user, token_access
from lensrelay.docstore.inlists import in_chunks
from lensrelay.docstore.serverbound import server_bound_rows, text_array_literal
from lensrelay.docstore.store import DocStore
from lensrelay.models import ApiToken, Document, Folder

logger = logging.getLogger(__name__)

CLOSE_ACCESS_ENDED = 4401
CLOSE_FOLDER_LOST = 4403

Credential = tuple[str, int]  # ("token", id) or ("user", id)


class WatchedSocket(Protocol):
    access: Access | None
    doc_id: str | None
    folder_id: int | None  # the folder of the socket's document; None for a standalone document

    async def access_lost(self, *, code: int, reason: str) -> None: ...

    def access_changed(self, access: Access) -> None: ...


def credential_of(access: Access | None) -> Credential | None:
    if access is None:
        return None
    if access.token_id is not None:
        return ("token", access.token_id)
    if access.user_id is not None:
        return ("user", access.user_id)
    return None


def current_access(credentials: Iterable[Credential]) -> dict[Credential, Access | None]:
    """What each credential grants now: None for a revoked, expired or deleted token or a user who may
    no longer sync. Two queries for any number of tokens, one per staff user."""
    wanted = set(credentials)
    token_ids = {pk for kind, pk in wanted if kind == "token"}
    user_ids = {pk for kind, pk in wanted if kind == "user"}
    now: dict[Credential, Access | None] = dict.fromkeys(wanted)
    for token in ApiToken.objects.filter(pk__in=token_ids).prefetch_related("folders"):
        now[("token", token.pk)] = token_access(token, frozenset(f.pk for f in token.folders.all()))
    for user in get_user_model().objects.filter(pk__in=user_ids):
        now[("user", user.pk)] = access_for_user(user)
    return now


def folders_of(doc_ids: Iterable[str]) -> dict[str, int]:
    """The folder each document is in now (folder documents: their own folder); standalone or deleted
    documents are left out."""
    wanted = list(doc_ids)
    if not wanted:
        return {}
    # One statement and no model: this runs every poll over every open document (300 of them through the
    # ORM were 5 ms of CPU a time on PostgreSQL, quoting the ids into the SQL in Python: issue 36).
    q = connection.ops.quote_name
    folders, documents = q(Folder._meta.db_table), q(Document._meta.db_table)
    doc_id, folder_id = q("doc_id"), q("folder_id")
    if connection.vendor == "postgresql":
        ids = text_array_literal(wanted)
        rows = server_bound_rows(
            f"SELECT 0, {doc_id}, {q('id')} FROM {folders} WHERE {doc_id} = ANY(%s::text[]) UNION ALL "
            f"SELECT 1, {doc_id}, {folder_id} FROM {documents} WHERE {doc_id} = ANY(%s::text[])",
            [ids, ids],
        )
    else:
        rows = []
        with connection.cursor() as cursor:
            for chunk in in_chunks(wanted):
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(
                    f"SELECT 0, {doc_id}, {q('id')} FROM {folders} WHERE {doc_id} IN ({marks}) UNION ALL "
                    f"SELECT 1, {doc_id}, {folder_id} FROM {documents} WHERE {doc_id} IN ({marks})",
                    [*chunk, *chunk],
                )
                rows += cursor.fetchall()
    # Notes' rows after folders': a note's wins, as it did when they were two reads.
    return {found: folder for _, found, folder in sorted(rows, key=lambda row: row[0])}


def _current(
    credentials: set[Credential], doc_ids: set[str]
) -> tuple[dict[Credential, Access | None], dict[str, int]]:
    return current_access(credentials), folders_of(doc_ids)


class AccessWatch:
    """The open sockets of one process (one document store), re-checked while there are any."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.sockets: set[WatchedSocket] = set()
        self._task: asyncio.Task[None] | None = None
        # What the last check read, and the sockets added since: while the credentials and folders read
        # the same, only those need a look (a thousand sockets walked twice a second stall the loop).
        self._last_read: tuple[dict[Credential, Access | None], dict[str, int]] | None = None
        self._added: set[WatchedSocket] = set()
        # What the open sockets hold, counted as they come and go: a check reads these, not every socket
        # (1,500 sockets walked twice a second were a few per cent of the loop, issue 36). A socket's
        # credential and document never change while it is open.
        self._watched: dict[WatchedSocket, tuple[Credential, str | None]] = {}
        self._credentials: Counter[Credential] = Counter()
        self._doc_ids: Counter[str] = Counter()

    def add(self, socket: WatchedSocket) -> None:
        credential = credential_of(socket.access)
        if credential is None:
            return  # the test configuration's anonymous caller has nothing to revoke
        if socket not in self._watched:
            self._watched[socket] = (credential, socket.doc_id)
            self._credentials[credential] += 1
            if socket.doc_id is not None:
                self._doc_ids[socket.doc_id] += 1
        self.sockets.add(socket)
        self._added.add(socket)
        if self._task is None or self._task.done():
            self._task = self.store.spawn(self._watch())

    def discard(self, socket: WatchedSocket) -> None:
        self.sockets.discard(socket)
        self._added.discard(socket)
        watched = self._watched.pop(socket, None)
        if watched is not None:
            credential, doc_id = watched
            _uncount(self._credentials, credential)
            if doc_id is not None:
                _uncount(self._doc_ids, doc_id)

    async def _watch(self) -> None:
        while self.sockets:
            await asyncio.sleep(self.store.poll_seconds)
            try:
                await self.check()
            except Exception:
                logger.exception("re-checking the access of open sockets failed; retrying")

    async def check(self) -> None:
        """Re-read every open socket's credentials and cut off or adjust the ones that changed."""
        if not self.sockets:
            return
        added, self._added = self._added, set()
        read = await self.store.db(_current, set(self._credentials), set(self._doc_ids))
        unchanged, self._last_read = read == self._last_read, read
        now, folders = read
        # Sockets sharing a credential and caps (a team on one token) get one answer, computed once.
        decided: dict[tuple[Credential, Access], Access | None] = {}
        for socket in list(added if unchanged else self.sockets):
            credential = credential_of(socket.access)
            if socket not in self.sockets or credential is None or socket.access is None:
                continue
            if credential not in now:
                # It joined while the read was under way, which did not cover its credential: that is no
                # sign of lost access. It is still among the added, so the next check looks at it.
                continue
            # A document moved to another folder takes its sockets along: the token must see that one.
            socket.folder_id = folders.get(socket.doc_id or "", socket.folder_id)
            key = (credential, socket.access)
            if key not in decided:
                access = now.get(credential)
                # A client token keeps its caps.
                decided[key] = None if access is None else access.capped_like(socket.access)
            access = decided[key]
            if access is None:
                logger.info("cutting a socket of %s off: %s grants no access", socket.doc_id, credential)
                self.discard(socket)
                await socket.access_lost(
                    code=CLOSE_ACCESS_ENDED, reason="token revoked or expired, or sign-in no longer valid"
                )
            elif not access.sees_folder(socket.folder_id):
                logger.info("cutting a socket of %s off: %s lost its folder", socket.doc_id, credential)
                self.discard(socket)
                await socket.access_lost(
                    code=CLOSE_FOLDER_LOST, reason="token no longer has access to this folder"
                )
            elif access != socket.access:
                socket.access_changed(access)


def _uncount(counts: Counter[Any], key: Any) -> None:
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]


def access_watch(store: DocStore) -> AccessWatch:
    return store.attached(AccessWatch)
