"""Purged is gone: every derived store of a purged note is empty, its live sockets close (4404, "document
purged") on this process and on others, a late edit is stored nowhere, and the id can never be used again:
not by `POST /doc/new`, a Yjs client, an HTTP update, the versions routes, a folder entry naming its uuid
in any folder, nor a file upload. Each refusal is tried with an admin token, another folder's token, a view
token and hostile ids.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient
from pycrdt import Doc, Text

from lensrelay.access.tokens import token_create
from lensrelay.asgi import application
from lensrelay.docstore import folderdoc
from lensrelay.docstore.persistence import content_doc_register
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.tombstones import PURGED_MESSAGE, DocumentPurged
from lensrelay.files.blobs import blob_list, blob_put
from lensrelay.files.kinds import blob_entry_meta
from lensrelay.history.models import DocVersion
from lensrelay.models import Document, Folder, PurgedDocument, YDoc, YSnapshot, YUpdate
from lensrelay.protocol import wire
from lensrelay.search.index import search_index_documents, search_indexed
from lensrelay.search.maintain import search_settled
from lensrelay.search.rows import IndexedDocument
from lensrelay.semantic.models import EmbeddedDocument, Passage
from lensrelay.vault.backlinks import backlink_indexer
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create, mirror_folder
from lensrelay.vault.purge import trash_purge
from lensrelay.vault.trash import documents_trash
from tests.lensrelay.sync.test_consumer import edit, handshake
from tests.lensrelay.test_change_feed import in_another_process

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "# Plan\n\nThe vault code is 4711.\n"
CUT_OFF_SECONDS = 2.0


@dataclass
class World:
    lens: Folder
    other: Folder
    plan: Document
    linker: Document
    tokens: dict[str, str]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def world(store: DocStore) -> World:
    lens = await sync_to_async(folder_create)(name="Lens")
    other = await sync_to_async(folder_create)(name="Other")
    plan = await document_create(store=store, folder=lens, path="/Plan.md", text=SECRET)
    linker = await document_create(store=store, folder=lens, path="/Linker.md", text="see [[Plan]]\n")
    await backlink_indexer(store).settled()

    def tokens() -> dict[str, str]:
        made = {
            "admin": token_create(name="admin", role="admin")[1],
            "edit": token_create(name="edit", role="edit")[1],
            "view": token_create(name="view", role="view")[1],
            "lens": token_create(name="lens", role="edit", folders=[lens])[1],
            "other": token_create(name="other", role="edit", folders=[other])[1],
        }
        return made

    return World(lens, other, plan, linker, await sync_to_async(tokens)())


async def trash_and_purge(store: DocStore, w: World) -> None:
    await documents_trash(store=store, doc_ids=[w.plan.doc_id], force=True)
    await asyncio.sleep(0.01)
    purged = await trash_purge(store, older_than_days=0)
    assert [p.doc_id for p in purged] == [w.plan.doc_id]


async def open_socket(doc_id: str, token: str) -> tuple[WebsocketCommunicator, Any]:
    comm = WebsocketCommunicator(application, f"/d/{doc_id}/ws/{doc_id}?token={token}")
    connected, _ = await comm.connect()
    assert connected
    return comm, await handshake(comm)


async def closed(comm: WebsocketCommunicator, seconds: float) -> tuple[dict[str, Any], float]:
    """The close message the socket gets, and how long after the call it came."""
    started = time.monotonic()
    while True:
        remaining = seconds + 1.0 - (time.monotonic() - started)
        message = await comm.receive_output(timeout=max(remaining, 0.01))
        if message["type"] == "websocket.close":
            return message, time.monotonic() - started


async def stored_anywhere(store: DocStore, doc_id: str) -> dict[str, bool]:
    """Every store a note's text or traces live in, and whether it holds anything of `doc_id`."""

    def rows() -> dict[str, bool]:
        return {
            "document": Document.objects.filter(doc_id=doc_id).exists(),
            "ydoc": YDoc.objects.filter(doc_id=doc_id).exists(),
            "log": YUpdate.objects.filter(doc_id=doc_id).exists(),
            "snapshot": YSnapshot.objects.filter(doc_id=doc_id).exists(),
            "versions": DocVersion.objects.filter(doc_id=doc_id).exists(),
            "vectors": EmbeddedDocument.objects.filter(doc_id=doc_id).exists(),
            "passages": Passage.objects.filter(document__doc_id=doc_id).exists(),
            "search": doc_id in search_indexed(),
            "blobs": bool(blob_list(doc_id=doc_id)),
        }

    found = await store.db(rows)
    found["room"] = doc_id in store.rooms
    return found


async def test_purge_empties_every_store_of_the_purged_note(store: Any, own_blob_dir: Path) -> None:
    w = await world(store)
    doc_id = w.plan.doc_id
    room = await store.get(doc_id)
    await store.compact(room)  # a snapshot, and with it a version
    assert w.plan.uuid in folderdoc.backlinks((await store.get(w.lens.doc_id)).doc)
    await store.db(blob_put, doc_id=doc_id, data=b"an attachment of the plan")
    await documents_trash(store=store, doc_ids=[doc_id], force=True)
    # What a worker may still have written meanwhile: a search row and vectors of the trashed note, and a
    # change logged after the snapshot.
    with room.transact():
        room.doc.get("contents", type=Text).insert(0, "x")
    await room.flushed()
    # The index drops a trashed note when its changes are derived: let that happen first, so the row
    # written below stands for one written afterwards.
    await search_settled(store)
    await store.db(
        search_index_documents,
        [IndexedDocument(doc_id=doc_id, folder_id=w.lens.pk, path="/Plan.md", title="Plan", text=SECRET)],
    )

    def vectors() -> None:
        embedded = EmbeddedDocument.objects.create(
            doc_id=doc_id, folder_id=w.lens.pk, path="/Plan.md", model="m", modified=0.0
        )
        Passage.objects.create(
            document=embedded, ordinal=0, start_line=1, end_line=3, digest="d", vector=b"\0" * 8
        )

    await store.db(vectors)
    assert all((await stored_anywhere(store, doc_id)).values())  # every store holds something to remove

    await asyncio.sleep(0.01)
    await trash_purge(store, older_than_days=0)
    assert not any((await stored_anywhere(store, doc_id)).values()), await stored_anywhere(store, doc_id)
    assert await PurgedDocument.objects.filter(doc_id=doc_id).aexists()
    folder_room = await store.get(w.lens.doc_id)
    assert w.plan.uuid not in folderdoc.backlinks(folder_room.doc)
    assert w.plan.uuid not in {e.uuid for e in folderdoc.entries(folder_room.doc).values()}
    # and the note that linked to it is untouched
    assert (await stored_anywhere(store, w.linker.doc_id))["document"]


async def test_a_socket_on_the_note_closes_4404_and_its_late_edit_is_stored_nowhere(store: Any) -> None:
    w = await world(store)
    comm, client = await open_socket(w.plan.doc_id, w.tokens["edit"])
    await trash_and_purge(store, w)
    message, _ = await closed(comm, CUT_OFF_SECONDS)
    assert (message["code"], message.get("reason")) == (4404, "document purged")
    await comm.send_to(bytes_data=wire.sync_update(edit(client, 0, "LATE ")))
    await asyncio.sleep(0.2)
    assert not any((await stored_anywhere(store, w.plan.doc_id)).values())


async def test_a_purge_in_another_process_closes_this_process_sockets_and_erases_late_edits(
    store: Any,
) -> None:
    w = await world(store)
    comm, client = await open_socket(w.plan.doc_id, w.tokens["edit"])
    await documents_trash(store=store, doc_ids=[w.plan.doc_id], force=True)
    await asyncio.sleep(0.01)
    await in_another_process(lambda other: trash_purge(other, older_than_days=0))
    # Before this process hears of it, the client edits: logged under the purged id for a moment at most.
    await comm.send_to(bytes_data=wire.sync_update(edit(client, 0, "LATE ")))
    message, after = await closed(comm, CUT_OFF_SECONDS)
    assert (message["code"], message.get("reason")) == (4404, "document purged")
    assert after <= CUT_OFF_SECONDS
    for _ in range(50):
        if not any((await stored_anywhere(store, w.plan.doc_id)).values()):
            break
        await asyncio.sleep(0.05)
    assert not any((await stored_anywhere(store, w.plan.doc_id)).values()), await stored_anywhere(
        store, w.plan.doc_id
    )


async def test_post_doc_new_refuses_a_purged_id_for_every_token(store: Any) -> None:
    w = await world(store)
    await trash_and_purge(store, w)
    client = AsyncClient()
    for name in ("admin", "edit"):
        answer = await client.post(
            "/doc/new",
            {"docId": w.plan.doc_id},
            content_type="application/json",
            headers=auth(w.tokens[name]),
        )
        assert answer.status_code == 409, answer.content
        assert answer.json()["error"] == PURGED_MESSAGE
    for name in ("view", "lens", "other"):  # may not create standalone documents at all
        answer = await client.post(
            "/doc/new",
            {"docId": w.plan.doc_id},
            content_type="application/json",
            headers=auth(w.tokens[name]),
        )
        assert answer.status_code == 403
    for hostile in (w.plan.doc_id + "/../x", w.plan.doc_id.upper() + "\x00", " " + w.plan.doc_id):
        answer = await client.post(
            "/doc/new", {"docId": hostile}, content_type="application/json", headers=auth(w.tokens["admin"])
        )
        assert answer.status_code == 400
    assert not any((await stored_anywhere(store, w.plan.doc_id)).values())
    with pytest.raises(DocumentPurged):
        await store.create(w.plan.doc_id, YDoc.Kind.STANDALONE)
    with pytest.raises(DocumentPurged):
        await store.db(content_doc_register, folder=w.lens, doc_id=w.plan.doc_id)
    assert not await YDoc.objects.filter(doc_id=w.plan.doc_id).aexists()
    # A fresh id still works.
    fresh = await client.post(
        "/doc/new", {}, content_type="application/json", headers=auth(w.tokens["admin"])
    )
    assert fresh.status_code == 200


async def test_document_routes_answer_404_for_a_purged_id(store: Any) -> None:
    w = await world(store)
    doc_id = w.plan.doc_id
    room = await store.get(doc_id)
    await store.compact(room)
    version = await DocVersion.objects.filter(doc_id=doc_id).afirst()
    assert version is not None
    await trash_and_purge(store, w)
    client = AsyncClient()
    for name in ("admin", "lens", "other", "view"):
        for path in (f"/d/{doc_id}/versions", f"/d/{doc_id}/versions/{version.pk}", f"/d/{doc_id}/as-update"):
            answer = await client.get(path, headers=auth(w.tokens[name]))
            assert answer.status_code == 404, (name, path, answer.content)
            assert SECRET not in answer.content.decode(errors="replace")
        update = await client.post(
            f"/d/{doc_id}/update",
            edit_update(),
            content_type="application/octet-stream",
            headers=auth(w.tokens[name]),
        )
        assert update.status_code == 404
    assert not any((await stored_anywhere(store, doc_id)).values())


def edit_update() -> bytes:
    doc: Doc[Any] = Doc()
    doc.get("contents", type=Text).insert(0, "resurrected")
    return doc.get_update()


async def test_a_yjs_client_connecting_to_a_purged_id_is_refused_4404(store: Any) -> None:
    w = await world(store)
    await trash_and_purge(store, w)
    for name in ("edit", "lens", "other", "view"):
        comm = WebsocketCommunicator(
            application, f"/d/{w.plan.doc_id}/ws/{w.plan.doc_id}?token={w.tokens[name]}"
        )
        connected, _ = await comm.connect()
        assert connected  # accepted first, then refused with a code the client reads
        started = time.monotonic()
        message, _ = await closed(comm, 1.0)
        assert (message["code"], message.get("reason")) == (4404, "document purged"), name
        assert time.monotonic() - started < 1.0  # no grace wait for a mirror that never comes
    assert not any((await stored_anywhere(store, w.plan.doc_id)).values())


async def test_a_folder_entry_naming_a_purged_uuid_is_ignored_in_every_folder(store: Any) -> None:
    w = await world(store)
    await trash_and_purge(store, w)
    for folder, path in ((w.lens, "/Back.md"), (w.other, "/Adopted.md")):
        room = await store.get(folder.doc_id)
        with room.transact():
            folderdoc.add_entry(room.doc, path=path, uuid=w.plan.uuid, type="markdown")
        await room.flushed()
        await mirror_folder(store, folder_id=folder.pk, room=room)
        assert not await Document.objects.filter(uuid=w.plan.uuid).aexists()
    # Hostile spellings of the uuid: not uuids at all (ignored), or another id altogether (upper case:
    # a new, empty document, never the purged one's state).
    room = await store.get(w.other.doc_id)
    with room.transact():
        for n, hostile in enumerate((f" {w.plan.uuid}", f"{{{w.plan.uuid}}}", w.plan.uuid + "\x00")):
            folderdoc.add_entry(room.doc, path=f"/Hostile {n}.md", uuid=hostile, type="markdown")
        folderdoc.add_entry(room.doc, path="/Upper.md", uuid=w.plan.uuid.upper(), type="markdown")
    await room.flushed()
    await mirror_folder(store, folder_id=w.other.pk, room=room)
    paths = {row.path: row for row in await sync_to_async(list)(Document.objects.filter(folder=w.other))}
    assert "/Upper.md" in paths and not any(p.startswith("/Hostile") for p in paths)
    upper = await store.get(paths["/Upper.md"].doc_id)
    assert upper is not None and str(upper.doc.get("contents", type=Text)) == ""
    assert not any((await stored_anywhere(store, w.plan.doc_id)).values())


async def test_file_routes_refuse_to_register_or_store_under_a_purged_id(
    store: Any, own_blob_dir: Path
) -> None:
    w = await world(store)
    data = b"\x89PNG\r\n\x1a\n" + b"purged" * 10
    digest = hashlib.sha256(data).hexdigest()
    client = AsyncClient()
    # A ticket handed out before the purge.
    early = await client.post(f"/f/{w.plan.doc_id}/upload-url?hash={digest}", headers=auth(w.tokens["lens"]))
    assert early.status_code == 200, early.content
    ticket_url = urlsplit(early.json()["uploadUrl"])
    await trash_and_purge(store, w)
    for name in ("admin", "lens", "other"):
        answer = await client.post(
            f"/f/{w.plan.doc_id}/upload-url?hash={digest}", headers=auth(w.tokens[name])
        )
        assert answer.status_code == 409 and answer.json()["error"] == PURGED_MESSAGE, (name, answer.content)
    view = await client.post(f"/f/{w.plan.doc_id}/upload-url?hash={digest}", headers=auth(w.tokens["view"]))
    assert view.status_code == 404
    late = await client.put(f"{ticket_url.path}?{ticket_url.query}", data=data, content_type="image/png")
    assert late.status_code == 409, late.content
    # A file entry naming the uuid with that hash is ignored like any other.
    room = await store.get(w.lens.doc_id)
    with room.transact():
        folderdoc.put_entry(
            room.doc, path="/pic.png", meta=blob_entry_meta(uuid=w.plan.uuid, path="/pic.png", digest=digest)
        )
    await room.flushed()
    await mirror_folder(store, folder_id=w.lens.pk, room=room)
    assert not any((await stored_anywhere(store, w.plan.doc_id)).values())


async def test_a_fresh_note_still_works_after_a_purge(store: Any) -> None:
    w = await world(store)
    await trash_and_purge(store, w)
    fresh = await document_create(store=store, folder=w.lens, path="/Plan.md", text="new plan\n")
    assert fresh.doc_id != w.plan.doc_id
    comm, _ = await open_socket(fresh.doc_id, w.tokens["lens"])
    await comm.disconnect()
    assert uuidlib.UUID(fresh.uuid)
