"""backlinks_v0 in folder documents follows the links in the texts, as Relay clients expect."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Text

from lensrelay.docstore import folderdoc
from lensrelay.docstore.offsets import text_replace
from lensrelay.vault import backlinks
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick_indexer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backlinks, "DEBOUNCE_SECONDS", 0.05)


async def rewrite(store: Any, doc_id: str, text: str) -> None:
    room = await store.get(doc_id)
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_replace(ytext, current=str(ytext), start=0, end=len(str(ytext)), value=text)


async def backlinks_settle(store: Any, folder: Any, want: dict[str, list[str]]) -> dict[str, list[str]]:
    room = await store.get(folder.doc_id)
    current: dict[str, list[str]] = {}
    for _ in range(60):
        current = folderdoc.backlinks(room.doc)
        if current == want:
            break
        await asyncio.sleep(0.1)
    return current


async def test_backlinks_follow_links_added_and_removed(store: Any, make_folder: Any) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    target = await document_create(store=store, folder=folder, path="/Notes/Target.md", text="# Target\n")
    source = await document_create(store=store, folder=folder, path="/Source.md", text="see [[Target]]\n")
    other = await document_create(store=store, folder=folder, path="/Other.md", text="`[[Target]]` is code\n")
    assert await backlinks_settle(store, folder, {target.uuid: [source.uuid]}) == {target.uuid: [source.uuid]}
    await rewrite(store, other.doc_id, "now [[Notes/Target|t]]\n")
    want = {target.uuid: sorted([source.uuid, other.uuid])}
    assert await backlinks_settle(store, folder, want) == want
    await rewrite(store, source.doc_id, "no links\n")
    assert await backlinks_settle(store, folder, {target.uuid: [other.uuid]}) == {target.uuid: [other.uuid]}


async def test_backlinks_stay_within_their_folder(store: Any, make_folder: Any) -> None:
    public = await sync_to_async(make_folder)("Public")
    secret = await sync_to_async(make_folder)("Secret")
    target = await document_create(store=store, folder=public, path="/Target.md", text="# Target\n")
    local = await document_create(store=store, folder=public, path="/Local.md", text="[[Target]]\n")
    want = {target.uuid: [local.uuid]}
    assert await backlinks_settle(store, public, want) == want
    # a Secret note links into Public in every way a link can: none of it reaches Public's folder doc
    spy = await document_create(store=store, folder=secret, path="/Spy.md", text="[[Public/Target]]\n")
    await rewrite(store, spy.doc_id, "[[Public/Target]] [[Target]] [[/Target]]\n")
    secret_room = await store.get(secret.doc_id)
    await backlinks.backlink_indexer(store).settled()
    await backlinks.reindex(store, spy.doc_id)
    assert folderdoc.backlinks((await store.get(public.doc_id)).doc) == want
    assert folderdoc.backlinks(secret_room.doc) == {}


async def test_entries_leaked_before_are_removed(store: Any, make_folder: Any) -> None:
    public = await sync_to_async(make_folder)("Public")
    secret = await sync_to_async(make_folder)("Secret")
    target = await document_create(store=store, folder=public, path="/Target.md", text="# Target\n")
    spy = await document_create(store=store, folder=secret, path="/Spy.md", text="no links yet\n")
    await asyncio.sleep(0.1)
    await backlinks.backlink_indexer(store).settled()  # nothing pending that would touch these documents
    room = await store.get(public.doc_id)
    with room.transact():  # as an older server wrote it
        folderdoc.set_backlinks(room.doc, target=target.uuid, sources=[spy.uuid])
        folderdoc.set_backlinks(room.doc, target=spy.uuid, sources=[target.uuid])
    local = await document_create(store=store, folder=public, path="/Local.md", text="[[Target]]\n")
    want = {target.uuid: [local.uuid]}
    assert await backlinks_settle(store, public, want) == want


async def test_links_written_before_the_entry_is_mirrored_are_indexed(store: Any, make_folder: Any) -> None:
    from lensrelay.docstore.persistence import content_doc_register
    from lensrelay.vault.folder_entries import content_doc_id
    from lensrelay.vault.folders import mirror_folder

    folder = await sync_to_async(make_folder)("Lens")
    target = await document_create(store=store, folder=folder, path="/Target.md", text="# Target\n")
    file_uuid = "0b8e4f7c-3f39-4a8e-9a61-3c7f1d2b5e10"
    doc_id = content_doc_id(folder, file_uuid)
    await sync_to_async(content_doc_register)(folder=folder, doc_id=doc_id)
    room = await store.create(doc_id, "content")
    await rewrite(store, doc_id, "see [[Target]]\n")  # indexed now: no entry names it yet
    await asyncio.sleep(0.2)
    await backlinks.backlink_indexer(store).settled()
    folder_room = await store.get(folder.doc_id)
    with folder_room.transact():
        folderdoc.add_entry(folder_room.doc, path="/Late.md", uuid=file_uuid)
    await mirror_folder(store, folder_id=folder.pk, room=folder_room)
    assert room.doc is not None
    assert await backlinks_settle(store, folder, {target.uuid: [file_uuid]}) == {target.uuid: [file_uuid]}


# -- with a derive process: moves, trash and restore follow the log ---------------------------------------


async def derive_afresh(store: Any) -> None:
    """What a derive process started now does (a restart: nothing remembered but the cursor)."""
    from lensrelay.docstore.derived import DeriveFollower

    follower = DeriveFollower(store)
    while True:
        before = follower.cursor
        await follower.step()
        if follower.cursor == before:
            return


async def test_with_a_derive_process_trash_restore_and_moves_update_backlinks_there(
    store: Any, make_folder: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lensrelay.docstore import derived
    from lensrelay.docstore.derived import derive_pending
    from lensrelay.vault.moves import FolderRef, move_entries
    from lensrelay.vault.trash import document_restore, documents_trash

    settings.LENSRELAY_DERIVED_WORK = "process"
    lens = await sync_to_async(make_folder)("Lens")
    other = await sync_to_async(make_folder)("Other")
    target = await document_create(store=store, folder=lens, path="/Notes/Target.md", text="target\n")
    linker = await document_create(store=store, folder=lens, path="/Linker.md", text="see [[Target]]\n")
    outsider = await document_create(store=store, folder=other, path="/Outsider.md", text="see [[Target]]\n")
    await derive_pending(store)
    lens_room, other_room = await store.get(lens.doc_id), await store.get(other.doc_id)
    linked = {target.uuid: [linker.uuid]}
    assert folderdoc.backlinks(lens_room.doc) == linked
    assert folderdoc.backlinks(other_room.doc) == {}  # a link resolves among its own folder's notes

    async def server_did_nothing(want: dict[str, list[str]]) -> None:
        await asyncio.sleep(0.3)  # longer than the (patched) inline debounce
        assert folderdoc.backlinks(lens_room.doc) == want
        assert not backlinks.backlink_indexer(store)._dirty

    # Trashed: the trash's own write takes the note out of backlinks_v0 (trashdoc), nothing else runs.
    await documents_trash(store=store, doc_ids=[target.doc_id], force=True)
    await server_did_nothing({})
    await derive_pending(store)
    assert folderdoc.backlinks(lens_room.doc) == {}

    # Restored: the links into it are back once the derive process read the folder's change.
    await document_restore(store=store, doc_id=target.doc_id)
    await server_did_nothing({})
    await derive_pending(store)
    assert folderdoc.backlinks(lens_room.doc) == linked

    # Again, the restore read by a derive process started afresh that re-reads no window below its
    # cursor (so no note's own change is in what it reads): it rebuilds the entries from the log.
    await documents_trash(store=store, doc_ids=[target.doc_id], force=True)
    await derive_pending(store)
    await document_restore(store=store, doc_id=target.doc_id)
    monkeypatch.setattr(derived, "WINDOW", 0)
    await derive_afresh(store)
    assert folderdoc.backlinks(lens_room.doc) == linked
    monkeypatch.undo()
    monkeypatch.setattr(backlinks, "DEBOUNCE_SECONDS", 0.05)

    # Moved to the other folder: the link from Lens now crosses folders (no backlink), and the note of
    # Other whose link meant it all along now finds it among its own folder's notes.
    await move_entries(
        store,
        source=FolderRef(id=lens.pk, name=lens.name, doc_id=lens.doc_id),
        target=FolderRef(id=other.pk, name=other.name, doc_id=other.doc_id),
        old="/Notes/Target.md",
        new="/Target.md",
        folder=False,
    )
    await server_did_nothing(linked)
    await derive_pending(store)
    assert folderdoc.backlinks(lens_room.doc) == {}
    assert folderdoc.backlinks(other_room.doc) == {target.uuid: [outsider.uuid]}
    # Nothing more to do: a pass changes nothing.
    before = (folderdoc.backlinks(lens_room.doc), folderdoc.backlinks(other_room.doc))
    await derive_pending(store)
    assert (folderdoc.backlinks(lens_room.doc), folderdoc.backlinks(other_room.doc)) == before
