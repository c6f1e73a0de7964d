"""A folder document can name only its own folder's documents: hostile `filemeta_v0` entries are ignored by
the mirror and change nothing stored. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycrdt import Doc

from lensrelay.access.auth import Access
from lensrelay.docstore import folderdoc
from lensrelay.docstore.folderdoc import FileEntry
from lensrelay.docstore.texts import text_cache
from lensrelay.models import Document, Folder, YDoc, YSnapshot, YUpdate
from lensrelay.text.vaultpath import fold_key
from lensrelay.vault.documents import document_create
from lensrelay.vault.folder_entries import UUID_RE, content_doc_id, content_doc_transfer
from lensrelay.vault.folders import folder_create, mirror_folder, sync_folder_documents
from lensrelay.vault.paths import path_index

pytestmark = pytest.mark.django_db(transaction=True)

SECRET_TEXT = "# Plans\n\nThe secret plan 🤫.\n"


@dataclass
class Vaults:
    public: Folder
    secret: Folder
    index_doc: Document  # Public/Index.md
    plan: Document  # Secret/Plan.md


def snapshot() -> dict[str, Any]:
    """Everything stored that the attacks must leave alone."""
    return {
        "documents": sorted(Document.objects.values_list("folder_id", "uuid", "doc_id", "path", "type")),
        "ydocs": sorted(YDoc.objects.values_list("doc_id", "kind", "folder_id")),
    }


async def settled_snapshot() -> dict[str, Any]:
    """The snapshot once two reads half a second apart agree (background mirroring has finished)."""
    last = await sync_to_async(snapshot)()
    for _ in range(20):
        await asyncio.sleep(0.5)
        now = await sync_to_async(snapshot)()
        if now == last:
            return now
        last = now
    raise AssertionError("the stored documents kept changing for 10 s")


@pytest.fixture
async def vaults(store: Any, transactional_db: None) -> Vaults:
    public = await sync_to_async(folder_create)(name="Public")
    secret = await sync_to_async(folder_create)(name="Secret")
    index_doc = await document_create(store=store, folder=public, path="/Index.md", text="# Index\n")
    plan = await document_create(store=store, folder=secret, path="/Plan.md", text=SECRET_TEXT)
    return Vaults(public=public, secret=secret, index_doc=index_doc, plan=plan)


async def add_entries(store: Any, folder: Folder, entries: dict[str, tuple[str, str]]) -> None:
    """Write entries into a folder document as a Yjs client would, then let the mirror run."""
    room = await store.get(folder.doc_id)
    with room.transact():
        for path, (file_uuid, kind) in entries.items():
            folderdoc.add_entry(room.doc, path=path, uuid=file_uuid, type=kind)
    await room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=room)


async def public_sees(store: Any, vaults: Vaults, user_path: str) -> str | None:
    """What a token limited to Public reads at a path, through the path index every reader uses."""
    index = path_index(store)
    await index.ensure()
    entry = index.resolve(Access(name="p", role="view", folder_ids=frozenset({vaults.public.pk})), user_path)
    return None if entry is None else await text_cache(store).get(entry.doc_id)


async def test_an_entry_naming_another_folders_document_is_ignored(store: Any, vaults: Vaults) -> None:
    before = await sync_to_async(snapshot)()
    await add_entries(store, vaults.public, {"/stolen.md": (vaults.plan.uuid, "markdown")})
    assert await sync_to_async(snapshot)() == before
    assert await public_sees(store, vaults, "Public/stolen.md") is None
    plan = await sync_to_async(Document.objects.get)(doc_id=vaults.plan.doc_id)
    assert (plan.folder_id, plan.path) == (vaults.secret.pk, "/Plan.md")
    assert await text_cache(store).get(vaults.plan.doc_id) == SECRET_TEXT
    # the folder keeps mirroring its own changes
    await add_entries(store, vaults.public, {"/Fresh.md": (str(uuidlib.uuid4()), "markdown")})
    assert await public_sees(store, vaults, "Public/Fresh.md") == ""


async def test_a_deleted_document_of_another_folder_cannot_be_adopted(store: Any, vaults: Vaults) -> None:
    secret_room = await store.get(vaults.secret.doc_id)
    # The entry removed from a copy of the folder document and mirrored directly: the row goes, as it does
    # once a purge has removed the document for good. (Removed from the live document, the live mirror
    # would put it back under /_trash/, and raced this check: CI, 2026-11-30.)
    copy = Doc()
    copy.apply_update(secret_room.state_update())
    folderdoc.remove_entry(copy, path="/Plan.md")
    await sync_to_async(sync_folder_documents)(folder_id=vaults.secret.pk, entries=folderdoc.entries(copy))
    assert not await sync_to_async(Document.objects.filter(doc_id=vaults.plan.doc_id).exists)()
    before = await settled_snapshot()
    await add_entries(store, vaults.public, {"/Adopted.md": (vaults.plan.uuid, "markdown")})
    assert await sync_to_async(snapshot)() == before
    assert await public_sees(store, vaults, "Public/Adopted.md") is None
    # its own folder may bring it back
    await add_entries(store, vaults.secret, {"/Plan.md": (vaults.plan.uuid, "markdown")})
    assert await sync_to_async(
        Document.objects.filter(doc_id=vaults.plan.doc_id, folder=vaults.secret).exists
    )()


async def test_entries_naming_folder_standalone_or_orphaned_documents_are_ignored(
    store: Any, vaults: Vaults
) -> None:
    prefix = vaults.public.doc_id[:36]
    standalone = str(uuidlib.uuid4())
    await store.create(f"{prefix}-{standalone}", YDoc.Kind.STANDALONE)
    orphan = str(uuidlib.uuid4())  # content of no known folder, as a deletion before owners were recorded
    await sync_to_async(YDoc.objects.create)(doc_id=f"{prefix}-{orphan}", kind=YDoc.Kind.CONTENT)
    await sync_to_async(YUpdate.objects.create)(doc_id=f"{prefix}-{orphan}", data=b"\x00\x00", writer="old")
    before = await sync_to_async(snapshot)()
    await add_entries(
        store,
        vaults.public,
        {
            "/secret-folder.md": (vaults.secret.doc_id[37:], "markdown"),
            "/own-folder": (vaults.public.doc_id[37:], "folder"),
            "/standalone.md": (standalone, "markdown"),
            "/orphan.md": (orphan, "markdown"),
        },
    )
    assert await sync_to_async(snapshot)() == before
    assert not await sync_to_async(YSnapshot.objects.exists)()


@pytest.mark.parametrize(
    "bad_id",
    [
        "x" * 200,
        "",
        "not-a-uuid",
        "{12345678-1234-1234-1234-123456789abc}",
        "12345678123412341234123456789abc",
    ],
)
async def test_malformed_ids_are_ignored_and_never_break_later_mirrors(
    store: Any, vaults: Vaults, bad_id: str
) -> None:
    before = await sync_to_async(snapshot)()
    await add_entries(store, vaults.public, {"/bad.md": (bad_id, "markdown")})
    assert await sync_to_async(snapshot)() == before
    fresh = str(uuidlib.uuid4())
    await add_entries(store, vaults.public, {"/Later.md": (fresh, "markdown")})
    later = await sync_to_async(Document.objects.get)(folder=vaults.public, path="/Later.md")
    assert later.uuid == fresh


async def test_entries_breaking_the_path_rules_are_ignored(store: Any, vaults: Vaults) -> None:
    before = await sync_to_async(snapshot)()
    await add_entries(
        store,
        vaults.public,
        {
            "/Index.md/under-a-file.md": (str(uuidlib.uuid4()), "markdown"),
            "/.md": (str(uuidlib.uuid4()), "markdown"),
            "/...md": (str(uuidlib.uuid4()), "markdown"),
            "/.hidden.md": (str(uuidlib.uuid4()), "markdown"),
            "/Invoice\u202egpj.md": (str(uuidlib.uuid4()), "markdown"),
            "/\ufeffBOM.md": (str(uuidlib.uuid4()), "markdown"),
            "/Cafe\u0301.md": (str(uuidlib.uuid4()), "markdown"),
            "/index.md": (str(uuidlib.uuid4()), "markdown"),  # collides with /Index.md after case-folding
            "//x.md": (str(uuidlib.uuid4()), "markdown"),
        },
    )
    assert await sync_to_async(snapshot)() == before
    assert await public_sees(store, vaults, "Public/Index.md") == "# Index\n"


async def test_a_newcomer_never_displaces_a_mirrored_entry(store: Any, vaults: Vaults) -> None:
    # "/INDEX.md" sorts before "/Index.md" but the mirrored one keeps its place; a duplicate id is ignored.
    before = await sync_to_async(snapshot)()
    await add_entries(
        store,
        vaults.public,
        {
            "/INDEX.md": (str(uuidlib.uuid4()), "markdown"),
            "/Copy of index.md": (vaults.index_doc.uuid, "markdown"),
            "/Index.md": (vaults.index_doc.uuid, "folder"),  # a retype of the file into a folder
        },
    )
    after = await sync_to_async(snapshot)()
    assert [d for d in after["documents"] if d[0] == vaults.public.pk] == [
        (vaults.public.pk, vaults.index_doc.uuid, vaults.index_doc.doc_id, "/Index.md", "folder")
    ]
    assert after["ydocs"] == before["ydocs"]


entry_ids = st.one_of(
    st.uuids().map(str),
    st.text(max_size=250),
    st.just("SECRET"),  # replaced by the Secret note's uuid
)
entry_paths = st.one_of(
    st.text(max_size=30).map(lambda s: "/" + s),
    st.sampled_from(["/Index.md", "/index.md", "/Index.md/x.md", "/A", "/A/b.md", "/a/B.md", "/.x.md"]),
)


def generated_folders() -> tuple[Folder, Folder]:
    """Public and Secret for the generated cases, made once per test (examples share the database)."""
    if not Folder.objects.filter(name="Gen Public").exists():
        folder_create(name="Gen Public")
        secret = folder_create(name="Gen Secret")
        secret_uuid = str(uuidlib.uuid4())
        doc_id = content_doc_id(secret, secret_uuid)
        YDoc.objects.create(doc_id=doc_id, kind=YDoc.Kind.CONTENT, folder=secret)
        Document.objects.create(folder=secret, uuid=secret_uuid, doc_id=doc_id, path="/S.md")
    return Folder.objects.get(name="Gen Public"), Folder.objects.get(name="Gen Secret")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.dictionaries(entry_paths, st.tuples(entry_ids, st.sampled_from(["markdown", "folder", "x"]))))
def test_generated_folder_documents_keep_every_invariant(
    raw: dict[str, tuple[str, str]], transactional_db: None
) -> None:
    public, secret = generated_folders()
    secret_rows = list(Document.objects.filter(folder=secret).values_list("doc_id", "path"))
    secret_uuid = Document.objects.get(folder=secret).uuid
    entries = {
        path: FileEntry(path=path, uuid=secret_uuid if file_id == "SECRET" else file_id, type=kind)
        for path, (file_id, kind) in raw.items()
    }
    sync_folder_documents(folder_id=public.pk, entries=entries)
    rows = list(Document.objects.filter(folder=public))
    assert all(UUID_RE.match(row.uuid) for row in rows)
    assert all(row.uuid == entries[row.path].uuid for row in rows)
    keys = [fold_key(row.path) for row in rows]
    assert len(keys) == len(set(keys))
    owners = dict(YDoc.objects.filter(doc_id__in=[r.doc_id for r in rows]).values_list("doc_id", "folder_id"))
    assert all(owners[row.doc_id] == public.pk for row in rows)
    assert list(Document.objects.filter(folder=secret).values_list("doc_id", "path")) == secret_rows


async def test_a_transfer_is_the_only_way_between_folders(store: Any, vaults: Vaults) -> None:
    with pytest.raises(ValueError, match="still listed in its old folder"):
        await sync_to_async(content_doc_transfer)(doc_id=vaults.plan.doc_id, folder=vaults.public)
    secret_room = await store.get(vaults.secret.doc_id)
    with secret_room.transact():
        folderdoc.remove_entry(secret_room.doc, path="/Plan.md")
    # Mirrored without the trash (the live mirror would put the entry back, under /_trash/): the row
    # goes, as it does once a purge has removed the document for good.
    entries = folderdoc.entries(secret_room.doc)
    await sync_to_async(sync_folder_documents)(folder_id=vaults.secret.pk, entries=entries)
    await sync_to_async(content_doc_transfer)(doc_id=vaults.plan.doc_id, folder=vaults.public)
    await add_entries(store, vaults.public, {"/Plan.md": (vaults.plan.uuid, "markdown")})
    assert await public_sees(store, vaults, "Public/Plan.md") == SECRET_TEXT
    # and the old folder can no longer take it back
    await add_entries(store, vaults.secret, {"/Plan again.md": (vaults.plan.uuid, "markdown")})
    plan = await sync_to_async(Document.objects.get)(doc_id=vaults.plan.doc_id)
    assert (plan.folder_id, plan.path) == (vaults.public.pk, "/Plan.md")
