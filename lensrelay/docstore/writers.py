"""Each writer its own Yjs client id, so clients can tell who wrote which text.

A Yjs item carries the client id of the Doc that made it, and a room's Doc has one: everything the server
wrote (every assistant's suggestion, every comment made through a service) was one anonymous author. A
writer's change is therefore made on a copy of the room's Doc with the writer's own client id (a "writer
Doc", kept per room and brought up to date before each use), and the difference is applied to the room's
Doc in one transaction, together with the writer's entry in the `users` map, which is Yjs's
`PermanentUserData` as Relay.md clients and the browser editor keep it: `users[name] = {ids: [client id,
...], ds: [...]}`. Any Yjs client then attributes the text with `getUserByClientId`.

A writer is the acting assistant or person (`lensrelay.docstore.acting`), named by its display name (what
a suggestion's author shows). Its client id is drawn from its label and this process: two server
processes never write under one id (a Yjs client id must have one writer, or clocks collide), and one
writer's ids in one process stay the same across its calls.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from pycrdt import Array, Doc, Map

from lensrelay.docstore.acting import Actor
from lensrelay.protocol.wire import Reader

USERS = "users"
# Writer Docs a room keeps (one per recent writer): each is a copy of the note.
KEEP_PER_ROOM = 4
_PROCESS_SALT = os.urandom(8)


@dataclass(frozen=True)
class Writer:
    name: str  # the entry in `users`
    client_id: int


def writer_for(actor: Actor) -> Writer:
    digest = hashlib.blake2b(actor.label.encode(), key=_PROCESS_SALT, digest_size=4).digest()
    # Yjs draws uint32 client ids; 0 is left out (never drawn by pycrdt or Yjs either, in practice).
    return Writer(name=actor.display_name, client_id=int.from_bytes(digest, "big") or 1)


class WriterDocs:
    """The writer Docs of one room's live Doc."""

    def __init__(self, live: Doc[Any]) -> None:
        self._live = live
        self._docs: OrderedDict[int, Doc[Any]] = OrderedDict()
        self._registered: set[Writer] = set()

    def checkout(self, writer: Writer) -> Doc[Any]:
        """The writer's Doc, holding exactly what the live Doc holds."""
        doc = self._docs.pop(writer.client_id, None)
        if doc is None:
            doc = Doc(client_id=writer.client_id)
            doc.apply_update(self._live.get_update())
        else:
            doc.apply_update(self._live.get_update(doc.get_state()))
        self._docs[writer.client_id] = doc
        while len(self._docs) > KEEP_PER_ROOM:
            self._docs.popitem(last=False)
        return doc

    def discard(self, writer: Writer) -> None:
        """Forget a writer Doc whose change did not reach the live Doc (an error midway)."""
        self._docs.pop(writer.client_id, None)

    def difference(self, writer: Writer) -> bytes:
        """What the writer's Doc holds beyond the live Doc."""
        return self._docs[writer.client_id].get_update(self._live.get_state())

    def register(self, writer: Writer, *, deleted: bytes = b"") -> None:
        """The writer's client id in `users` once it wrote an item, and the deletion set of a change that
        only deleted (call inside the live Doc's transaction)."""
        wrote = writer.client_id in clients(self._live.get_state())
        if not deleted and (writer in self._registered or not wrote):
            return
        users = self._live.get(USERS, type=Map)
        entry = users.get(writer.name)
        if not isinstance(entry, Map):
            users[writer.name] = Map({"ids": Array(), "ds": Array()})
            entry = users[writer.name]
        for name in ("ids", "ds"):
            if not isinstance(entry.get(name), Array):
                entry[name] = Array()
        # Floats: pycrdt writes a Python int as a BigInt, which Yjs's PermanentUserData does not match
        # against client ids (numbers).
        client = float(writer.client_id)
        if wrote and client not in list(entry["ids"]):
            entry["ids"].append(client)
        if deleted:
            entry["ds"].append(deleted)
        if wrote:
            self._registered.add(writer)


def deletion_set(updates: list[bytes]) -> bytes:
    """The deletion set of a change, as PermanentUserData keeps one, when its one update only deletes.

    A Yjs v1 update is its structs (first, how many clients wrote some) then its deletion set, encoded as
    `writeDeleteSet` encodes one: with no structs, the rest of the update is exactly that."""
    if len(updates) != 1 or updates[0][:1] != b"\x00" or updates[0] == b"\x00\x00":
        return b""
    return updates[0][1:]


def clients(state_vector: bytes) -> set[int]:
    """The client ids a Yjs state vector names."""
    reader = Reader(state_vector)
    found = set()
    for _ in range(reader.var_uint()):
        found.add(reader.var_uint())
        reader.var_uint()
    return found
