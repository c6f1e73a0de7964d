"""Fast imports: an unchanged re-import costs a hash comparison and changes nothing; changed files still go
through their live room; the content hash never vouches for a text that changed since it was taken."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycrdt import Text

from lensrelay.docstore import contenthash, persistence
from lensrelay.docstore.offsets import text_insert
from lensrelay.models import Document, Folder, YDoc, YSnapshot, YUpdate
from lensrelay.search.index import search_indexed
from lensrelay.search.maintain import search_settled
from lensrelay.vault.folders import mirror_for
from lensrelay.vault.importexport import export_vault, import_vault

pytestmark = pytest.mark.django_db(transaction=True)

FILES: dict[str, bytes] = {
    "Index.md": b"# Index\n\nSee [[Notes/Idea]].\n",
    "Notes/Idea.md": "# Idée\n\nÜnïcode, 東京, emoji🙂 and 👩‍👩‍👧‍👦.\n".encode(),
    "Notes/CRLF.md": b"# Windows\r\n\r\nLine one\r\nLine two\r\n",
    "Deep/er/still/Note.md": b"no newline at the end",
    "Empty.md": b"",
}


def write_vault(root: Path, files: dict[str, bytes]) -> None:
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def everything_stored() -> dict[str, Any]:
    """Every row an import may write, with every column: a re-import that changes nothing keeps it all."""
    return {
        "log": list(YUpdate.objects.order_by("id").values_list("id", "doc_id", "data", "writer", "created")),
        "snapshots": list(YSnapshot.objects.order_by("id").values_list()),
        "ydocs": list(YDoc.objects.order_by("id").values_list()),
        "documents": list(Document.objects.order_by("id").values_list()),
        "folders": list(Folder.objects.order_by("id").values_list()),
        "index": search_indexed(),
    }


async def settle(store: Any) -> None:
    """Wait for everything the import set going: room flushes, folder mirroring, search indexing."""
    for room in list(store.rooms.values()):
        await room.flushed()
    await mirror_for(store).settled()
    await search_settled(store)


def doc_id_at(folder: str, path: str) -> str:
    return Document.objects.get(folder__name=folder, path=path).doc_id


def content_rooms(store: Any) -> list[str]:
    return sorted(doc_id for doc_id, room in store.rooms.items() if room.kind == "content")


async def test_an_unchanged_reimport_writes_nothing_and_loads_no_document(store: Any, tmp_path: Path) -> None:
    write_vault(tmp_path / "v", FILES)
    first = await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    assert (first.created, first.updated, first.unchanged) == (len(FILES), 0, 0)
    assert content_rooms(store) == []  # a fresh import writes states directly, no live room
    before = await sync_to_async(everything_stored)()

    again = await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    assert (again.created, again.updated, again.unchanged, again.folders) == (0, 0, len(FILES), 0)
    assert content_rooms(store) == []
    await settle(store)
    assert await sync_to_async(everything_stored)() == before


async def test_a_fresh_import_hashes_every_document_it_writes(store: Any, tmp_path: Path) -> None:
    write_vault(tmp_path / "v", FILES)
    await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    texts = {
        await sync_to_async(doc_id_at)("Vault", "/" + relative): data.decode()
        for relative, data in FILES.items()
    }
    assert await sync_to_async(contenthash.content_unchanged)(texts) == set(texts)
    # a hash vouches only for its own text
    other = {doc_id: text + "!" for doc_id, text in texts.items()}
    assert await sync_to_async(contenthash.content_unchanged)(other) == set()


async def test_a_changed_file_is_edited_through_its_room_and_nothing_else_is_touched(
    store: Any, tmp_path: Path
) -> None:
    write_vault(tmp_path / "v", FILES)
    await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    changed_id = await sync_to_async(doc_id_at)("Vault", "/Notes/Idea.md")
    before = await sync_to_async(everything_stored)()

    (tmp_path / "v" / "Notes" / "Idea.md").write_bytes("# Idée\n\nA second version.\n".encode())
    report = await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    assert (report.created, report.updated, report.unchanged) == (0, 1, len(FILES) - 1)
    assert content_rooms(store) == [changed_id]
    await settle(store)
    after = await sync_to_async(everything_stored)()
    new_rows = [row for row in after["log"] if row not in before["log"]]
    assert [row[1] for row in new_rows] == [changed_id]  # one logged edit, of that document only
    assert after["log"][: len(before["log"])] == before["log"]
    assert await sync_to_async(persistence.stored_text)(changed_id) == "# Idée\n\nA second version.\n"


async def test_a_live_edit_voids_the_hash_so_a_reimport_restores_the_file(store: Any, tmp_path: Path) -> None:
    write_vault(tmp_path / "v", FILES)
    await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    doc_id = await sync_to_async(doc_id_at)("Vault", "/Index.md")
    room = await store.get(doc_id)
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_insert(ytext, current=str(ytext), index=0, value="edited live ")
    await room.flushed()
    assert await sync_to_async(contenthash.content_unchanged)({doc_id: FILES["Index.md"].decode()}) == set()

    report = await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    assert (report.updated, report.unchanged) == (1, len(FILES) - 1)
    assert str(ytext) == FILES["Index.md"].decode()
    await settle(store)
    assert await sync_to_async(persistence.stored_text)(doc_id) == FILES["Index.md"].decode()


async def test_compaction_keeps_a_valid_hash_and_voids_a_stale_one(store: Any, tmp_path: Path) -> None:
    write_vault(tmp_path / "v", FILES)
    await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    kept = await sync_to_async(doc_id_at)("Vault", "/Index.md")
    edited = await sync_to_async(doc_id_at)("Vault", "/Notes/CRLF.md")
    await sync_to_async(persistence.compact)(kept)  # folds only the import's own update
    room = await store.get(edited)
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_insert(ytext, current=str(ytext), index=0, value="x")
    await room.flushed()
    with room.transact():  # and back: the same text as the file, but not the state the hash describes
        del ytext[0:1]
    await room.flushed()
    await sync_to_async(persistence.compact)(edited)
    assert not await sync_to_async(YUpdate.objects.filter(doc_id__in=[kept, edited]).exists)()

    texts = {kept: FILES["Index.md"].decode(), edited: FILES["Notes/CRLF.md"].decode()}
    assert await sync_to_async(contenthash.content_unchanged)(texts) == {kept}
    # the stale hash only costs a comparison with the stored text: equal, so nothing is written
    logged = await sync_to_async(YSnapshot.objects.count)()
    report = await import_vault(store=store, root=tmp_path / "v", folder_name="Vault")
    assert (report.updated, report.unchanged) == (0, len(FILES))
    assert await sync_to_async(YUpdate.objects.filter(doc_id__in=[kept, edited]).exists)() is False
    assert await sync_to_async(YSnapshot.objects.count)() == logged


note_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(note_text, min_size=1, max_size=6), edits=st.data())
async def test_generated_texts_round_trip_and_reimport_settles(
    store: Any, tmp_path_factory: Any, transactional_db: None, texts: list[str], edits: st.DataObject
) -> None:
    folder_name = f"Generated {uuid.uuid4().hex[:8]}"  # examples share the database
    vault = tmp_path_factory.mktemp("gen")
    files = {f"Dir {i % 2}/Note {i}.md": text.encode("utf-8") for i, text in enumerate(texts)}
    write_vault(vault, files)
    first = await import_vault(store=store, root=vault, folder_name=folder_name)
    assert first.created == len(files)
    folder = await sync_to_async(Folder.objects.get)(name=folder_name)
    out = tmp_path_factory.mktemp("out")
    await sync_to_async(export_vault)(folder=folder, target=out)
    assert tree(out) == files  # byte for byte

    # change some files: exactly those are updated, the rest cost a hash, and the export follows
    changed = edits.draw(st.sets(st.sampled_from(sorted(files))))
    for relative in changed:
        new = edits.draw(note_text.filter(lambda t, old=files[relative]: t.encode() != old))
        files[relative] = new.encode("utf-8")
    write_vault(vault, files)
    again = await import_vault(store=store, root=vault, folder_name=folder_name)
    assert (again.created, again.updated, again.unchanged) == (0, len(changed), len(files) - len(changed))
    await settle(store)
    out2 = tmp_path_factory.mktemp("out")
    await sync_to_async(export_vault)(folder=folder, target=out2)
    assert tree(out2) == files
