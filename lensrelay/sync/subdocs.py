"""Relay.md's sub-document query: which of a folder's notes changed, answered with their state vectors.

A Relay client connected to a folder document sends message 7 with the ids of the notes it holds (a
count, then each id as a string) and compares the answer, message 8 carrying a CBOR map of id -> Yjs
state vector, with its own copies to decide which notes to sync. As the Rust server does, ids it does
not know are left out of the answer; here so are ids of another folder, notes in the trash (invisible to
tokens everywhere else), purged ones and every id asked on a note's own socket (a note has no
sub-documents), so the answer reveals nothing the token could not read. An empty list is answered with
an empty map (the Rust server would list its whole index; the Relay plugin always names its notes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pycrdt import get_state

from lensrelay.docstore import persistence
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import get_store
from lensrelay.models import Document, YDoc
from lensrelay.protocol.wire import MalformedFrame, Reader
from lensrelay.text.vaultpath import TRASH

# The Relay plugin asks in pages of a few hundred; more in one frame is refused as malformed.
MAX_IDS_PER_QUERY = 1000
MAX_ID_CHARS = 100


def read_query(reader: Reader) -> list[str]:
    if reader.at_end():
        return []  # the first form of the message carried no ids
    count = reader.var_uint()
    if count > MAX_IDS_PER_QUERY:
        raise MalformedFrame(f"sub-document query names {count} documents, at most {MAX_IDS_PER_QUERY}")
    ids = [reader.var_string() for _ in range(count)]
    if any(len(doc_id) > MAX_ID_CHARS for doc_id in ids):
        raise MalformedFrame("sub-document id too long")
    return list(dict.fromkeys(ids))


def folder_notes(*, folder_id: int, doc_ids: list[str]) -> list[str]:
    """Which of ``doc_ids`` are documents of the folder outside its trash (in the database's order); a
    purged note has no row left."""
    return list(
        Document.objects.filter(folder_id=folder_id, doc_id__in=doc_ids)
        .exclude(path=TRASH)
        .exclude(path__startswith=TRASH + "/")
        .values_list("doc_id", flat=True)
    )


def stored_state_vectors(doc_ids: list[str]) -> dict[str, bytes]:
    vectors: dict[str, bytes] = {}
    for doc_id in doc_ids:
        update = persistence.load_state(doc_id).update
        if update is not None:
            vectors[doc_id] = get_state(update)
    return vectors


async def answer(*, room: Room[Any], folder_id: int | None, doc_ids: list[str]) -> bytes:
    """The CBOR body of message 8 for a query on ``room``'s socket."""
    if room.kind != YDoc.Kind.FOLDER or folder_id is None or not doc_ids:
        return cbor_map({})
    store = get_store()
    known = await store.db(folder_notes, folder_id=folder_id, doc_ids=doc_ids)
    live = {doc_id: store.rooms[doc_id].doc.get_state() for doc_id in known if doc_id in store.rooms}
    stored = await store.db(stored_state_vectors, [doc_id for doc_id in known if doc_id not in live])
    return cbor_map({**stored, **live})


def _head(major: int, length: int) -> bytes:
    if length < 24:
        return bytes([major << 5 | length])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if length < 1 << (8 * size):
            return bytes([major << 5 | extra]) + length.to_bytes(size, "big")
    raise ValueError("too long for CBOR")


def cbor_map(entries: Mapping[str, bytes]) -> bytes:
    """A CBOR map of text keys to byte strings (RFC 8949 major types 5, 3 and 2)."""
    out = bytearray(_head(5, len(entries)))
    for key, value in entries.items():
        encoded = key.encode()
        out += _head(3, len(encoded)) + encoded + _head(2, len(value)) + value
    return bytes(out)
