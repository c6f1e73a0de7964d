"""Folder names are unique once folded (case, Unicode normalisation, spelling): a name that would be another
folder's to links is refused at creation and rename, with nothing changed; a rename rewrites links exactly.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection
from django.db.migrations.executor import MigrationExecutor
from django.test import AsyncClient

from lensrelay.access.auth import Access
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import text_cache
from lensrelay.models import Document, Folder
from lensrelay.vault.backlinks import backlink_indexer
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import FolderNameTaken, folder_create
from lensrelay.vault.moves import MoveRefused, folder_rename
from lensrelay.vault.paths import path_index

pytestmark = pytest.mark.django_db(transaction=True)

EVERYONE = Access(name="test", role="admin", folder_ids=None)


async def _vaults(store: DocStore) -> tuple[Folder, Folder, Document, Document]:
    public = await sync_to_async(folder_create)(name="Public")
    secret = await sync_to_async(folder_create)(name="Secret")
    shared = await document_create(store=store, folder=public, path="/Shared.md", text="public\n")
    await document_create(store=store, folder=secret, path="/Shared.md", text="secret\n")
    linker = await document_create(
        store=store, folder=secret, path="/Linker.md", text="see [[Public/Shared]]\n"
    )
    await backlink_indexer(store).settled()
    await path_index(store).ensure()
    return public, secret, shared, linker


async def test_an_admin_rename_to_a_case_variant_of_another_folder_is_refused(
    store: Any, staff_client: AsyncClient
) -> None:
    public, _, _, linker = await _vaults(store)
    response = await staff_client.post(f"/admin/lensrelay/folder/{public.pk}/change/", {"name": "secret"})
    assert response.status_code == 200  # the form again, with its error
    page = response.content.decode()
    assert "A folder named Secret already exists, and secret differs from it only by letter case" in page
    assert (await Folder.objects.aget(pk=public.pk)).name == "Public"
    assert await text_cache(store).get(linker.doc_id) == "see [[Public/Shared]]\n"  # nothing rewritten


@pytest.mark.parametrize("name", ["secret", "SECRET", "Secret.", "\uff33ecret", "Se%63ret"])
async def test_the_rename_service_refuses_a_folded_twin_with_nothing_changed(store: Any, name: str) -> None:
    public, _, shared, linker = await _vaults(store)
    with pytest.raises(MoveRefused, match="A folder named Secret already exists"):
        await folder_rename(store, folder_id=public.pk, name=name)
    assert (await Folder.objects.aget(pk=public.pk)).name == "Public"
    assert await text_cache(store).get(linker.doc_id) == "see [[Public/Shared]]\n"
    index = path_index(store)
    found = index.resolve(EVERYONE, "Public/Shared.md")
    assert found is not None and found.doc_id == shared.doc_id


async def test_a_legitimate_rename_rewrites_links_exactly_and_back(store: Any) -> None:
    public, _, shared, linker = await _vaults(store)
    report = await folder_rename(store, folder_id=public.pk, name="Open")
    assert report.links_rewritten == 1
    assert await text_cache(store).get(linker.doc_id) == "see [[Open/Shared]]\n"
    index = path_index(store)
    found = index.resolve(EVERYONE, "Open/Shared.md")
    assert found is not None and found.doc_id == shared.doc_id
    # Its own name in another case is still its own: allowed, and links follow exactly.
    await folder_rename(store, folder_id=public.pk, name="OPEN")
    assert await text_cache(store).get(linker.doc_id) == "see [[OPEN/Shared]]\n"
    report = await folder_rename(store, folder_id=public.pk, name="Public")
    assert report.links_rewritten == 1
    assert await text_cache(store).get(linker.doc_id) == "see [[Public/Shared]]\n"
    assert (await Folder.objects.aget(pk=public.pk)).name_key == "public"


def test_creating_a_folded_twin_is_refused_everywhere(tmp_path: Path) -> None:
    folder_create(name="Secret")
    with pytest.raises(FolderNameTaken, match="A folder named Secret already exists"):
        folder_create(name="se\u0063ret ")
    (tmp_path / "a.md").write_text("x\n")
    with pytest.raises(CommandError, match="A folder named Secret already exists"):
        call_command(
            "import_vault", str(tmp_path), "--folder", "SECRET", "--no-progress", stdout=io.StringIO()
        )
    # And the database itself, for a writer that skips the services.
    with pytest.raises(IntegrityError):
        Folder.objects.create(name="SECRET")
    assert list(Folder.objects.values_list("name", flat=True)) == ["Secret"]


async def test_the_admin_refuses_creating_a_folded_twin(staff_client: AsyncClient) -> None:
    await sync_to_async(folder_create)(name="Café")
    response = await staff_client.post("/admin/lensrelay/folder/add/", {"name": "CAFE\u0301"})
    assert response.status_code == 200
    assert "A folder named Café already exists, and CAFÉ differs from it only" in response.content.decode()
    assert await Folder.objects.acount() == 1


def test_the_migration_keys_every_folder_and_leaves_an_older_collision_unkeyed(
    transactional_db: None,
) -> None:
    before, after = [("lensrelay", "0011_search_titles")], [("lensrelay", "0012_folder_name_key")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old_folder = executor.loader.project_state(before).apps.get_model("lensrelay", "Folder")
    for name in ("Secret", "Public", "SECRET"):
        old_folder.objects.create(name=name, doc_id=f"{'a' * 36}-{name}")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    keys = dict(
        MigrationExecutor(connection)
        .loader.project_state(after)
        .apps.get_model("lensrelay", "Folder")
        .objects.values_list("name", "name_key")
    )
    assert keys == {"Secret": "secret", "Public": "public", "SECRET": None}
    MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    # The unkeyed twin still blocks: its name is compared by the services.
    Folder.objects.filter(name="Secret").delete()
    with pytest.raises(FolderNameTaken, match="A folder named SECRET already exists"):
        folder_create(name="secret")
