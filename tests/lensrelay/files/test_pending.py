"""New file ids no folder entry names: bounded per folder, bounded in blobs, and removed with their blobs
after LENSRELAY_UNLINKED_FILE_HOURS (by `purge_trash --yes`), while linked files and notes stay."""

from __future__ import annotations

import hashlib
import io
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pycrdt
import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import AsyncClient
from django.utils import timezone

from lensrelay.docstore import folderdoc
from lensrelay.files import pending
from lensrelay.files.blobs import blob_exists, blob_list, blob_put
from lensrelay.files.kinds import blob_entry_meta
from lensrelay.models import Folder, YDoc
from lensrelay.vault.folder_entries import content_doc_id
from lensrelay.vault.folders import mirror_folder

pytestmark = pytest.mark.django_db(transaction=True)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def local(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


@pytest.fixture
def client() -> AsyncClient:
    return AsyncClient()


async def upload(client: AsyncClient, *, token: str, doc_id: str, data: bytes) -> Any:
    digest = hashlib.sha256(data).hexdigest()
    answer = await client.post(f"/f/{doc_id}/upload-url?hash={digest}", headers=auth(token))
    if answer.status_code != 200:
        return answer
    return await client.put(local(answer.json()["uploadUrl"]), data=data)


async def link(store: Any, *, folder: Folder, file_uuid: str, path: str, data: bytes) -> None:
    room = await store.get(folder.doc_id)
    digest = hashlib.sha256(data).hexdigest()
    with room.transact():
        folderdoc.put_entry(
            room.doc, path=path, meta=blob_entry_meta(uuid=file_uuid, path=path, digest=digest)
        )
    await room.flushed()
    await mirror_folder(store, folder_id=folder.pk, room=room)


def later(hours: float) -> datetime:
    return timezone.now() + timedelta(hours=hours)


async def test_unlinked_ids_and_blobs_expire_linked_ones_stay(
    store: Any,
    make_folder: Callable[..., Folder],
    make_token: Callable[..., str],
    client: AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    public = await sync_to_async(make_folder)("Public")
    editor = await sync_to_async(make_token)("edit", (public,))
    orphan_uuid, linked_uuid = str(uuid.uuid4()), str(uuid.uuid4())
    orphan, linked = content_doc_id(public, orphan_uuid), content_doc_id(public, linked_uuid)
    assert (await upload(client, token=editor, doc_id=orphan, data=b"never linked")).status_code == 200
    assert (await upload(client, token=editor, doc_id=linked, data=b"linked")).status_code == 200
    await link(store, folder=public, file_uuid=linked_uuid, path="/kept.png", data=b"linked")
    # A note a Yjs client created before its entry holds text: never a "waiting file".
    note_id = content_doc_id(public, str(uuid.uuid4()))
    await sync_to_async(pending.file_doc_register)(
        access=await sync_to_async(_access_of)(editor), doc_id=note_id
    )
    room = await store.get(note_id)
    with room.transact():
        room.doc.get("contents", type=pycrdt.Text).insert(0, "typed text")
    await room.flushed()
    # Bytes under an id the server has no record of at all.
    stray = content_doc_id(public, str(uuid.uuid4()))
    await sync_to_async(blob_put)(doc_id=stray, data=b"stray")

    # Within the grace period nothing goes.
    assert await sync_to_async(pending.unlinked_purge)(older_than_hours=24, now=later(23)) == []
    assert await sync_to_async(blob_list)(doc_id=orphan)

    # Past it, through the command an operator runs (the clock moved forward, no sleeping).
    moved = later(25)
    monkeypatch.setattr(pending, "_now", lambda: moved)
    out = io.StringIO()
    await sync_to_async(call_command)("purge_trash", stdout=out)
    assert "Dry run: 2 files" in out.getvalue() and orphan in out.getvalue()
    assert await sync_to_async(blob_list)(doc_id=orphan)  # a dry run removes nothing
    await sync_to_async(call_command)("purge_trash", "--yes", stdout=out)
    assert "Removed 2 files" in out.getvalue()

    assert not await YDoc.objects.filter(doc_id=orphan).aexists()
    assert await sync_to_async(blob_list)(doc_id=orphan) == []
    assert await sync_to_async(blob_list)(doc_id=stray) == []
    assert await sync_to_async(blob_exists)(doc_id=linked, hash=hashlib.sha256(b"linked").hexdigest())
    assert await YDoc.objects.filter(doc_id=note_id).aexists()
    # The id is forgotten: it reads as missing, and registering it again starts a new grace period.
    reader = await sync_to_async(make_token)("view", (public,), "reader")
    assert (await client.get(f"/f/{orphan}/history", headers=auth(reader))).status_code == 404


def _access_of(raw: str) -> Any:
    from lensrelay.access.auth import authenticate_token

    return authenticate_token(raw)


async def test_pending_ids_are_capped_per_folder_with_a_clear_error(
    store: Any,
    make_folder: Callable[..., Folder],
    make_token: Callable[..., str],
    client: AsyncClient,
    settings: Any,
) -> None:
    settings.LENSRELAY_MAX_PENDING_FILES = 2
    public, other = await sync_to_async(make_folder)("Public"), await sync_to_async(make_folder)("Other")
    editor = await sync_to_async(make_token)("edit", (public,))
    others = await sync_to_async(make_token)("edit", (other,), "other")
    viewer = await sync_to_async(make_token)("view", (public,), "viewer")
    uuids = [str(uuid.uuid4()) for _ in range(3)]
    ids = [content_doc_id(public, u) for u in uuids]
    for doc_id in ids[:2]:
        assert (await upload(client, token=editor, doc_id=doc_id, data=doc_id.encode())).status_code == 200
    refused = await upload(client, token=editor, doc_id=ids[2], data=b"third")
    assert refused.status_code == 429
    assert "2 new files already wait for their folder entry" in refused.json()["error"]
    assert not await YDoc.objects.filter(doc_id=ids[2]).aexists()
    # The cap is per folder: another folder's token is not blocked by Public's waiting ids.
    elsewhere = content_doc_id(other, str(uuid.uuid4()))
    assert (await upload(client, token=others, doc_id=elsewhere, data=b"x")).status_code == 200
    # Nor can it touch Public's waiting ids, and a view token registers nothing.
    assert (await upload(client, token=others, doc_id=ids[0], data=b"y")).status_code == 404
    viewer_id = content_doc_id(public, str(uuid.uuid4()))
    assert (await upload(client, token=viewer, doc_id=viewer_id, data=b"v")).status_code == 404
    assert not await YDoc.objects.filter(doc_id=viewer_id).aexists()
    # Linking one frees its place.
    await link(store, folder=public, file_uuid=uuids[0], path="/a.png", data=ids[0].encode())
    assert (await upload(client, token=editor, doc_id=ids[2], data=b"third")).status_code == 200


async def test_a_waiting_id_holds_few_blobs_a_linked_one_keeps_its_history(
    store: Any, make_folder: Callable[..., Folder], make_token: Callable[..., str], client: AsyncClient
) -> None:
    public = await sync_to_async(make_folder)("Public")
    editor = await sync_to_async(make_token)("edit", (public,))
    file_uuid = str(uuid.uuid4())
    doc_id = content_doc_id(public, file_uuid)
    for n in range(pending.PENDING_BLOBS_PER_FILE):
        assert (await upload(client, token=editor, doc_id=doc_id, data=b"v%d" % n)).status_code == 200
    # The same bytes again are fine (nothing new is stored); new ones are not.
    assert (await upload(client, token=editor, doc_id=doc_id, data=b"v0")).status_code == 200
    refused = await upload(client, token=editor, doc_id=doc_id, data=b"one too many")
    assert refused.status_code == 429 and "no folder entry yet" in refused.json()["error"]
    direct = await client.put(
        f"/f/{doc_id}/upload?hash={hashlib.sha256(b'one too many').hexdigest()}",
        data=b"one too many",
        headers=auth(editor),
    )
    assert direct.status_code == 429
    assert len(await sync_to_async(blob_list)(doc_id=doc_id)) == pending.PENDING_BLOBS_PER_FILE
    await link(store, folder=public, file_uuid=file_uuid, path="/pic.png", data=b"v0")
    assert (await upload(client, token=editor, doc_id=doc_id, data=b"one too many")).status_code == 200


def test_hostile_names_under_the_blob_root_are_left_alone(settings: Any, own_blob_dir: Any) -> None:
    root = own_blob_dir / "files"
    (root / "..weird").mkdir(parents=True)
    (root / "bad\nname").mkdir()
    assert pending.unlinked_expired(older_than_hours=0, now=later(1000)) == []
