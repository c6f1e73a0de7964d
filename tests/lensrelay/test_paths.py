"""The path index on a restart: built from one compact query, not read again when nothing moved since, and
read again when another process mirrored meanwhile."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lensrelay import paths
from lensrelay.docstore.store import DocStore, get_store
from lensrelay.documents import document_create
from lensrelay.folders import folder_create, folder_settled, mirror_for
from lensrelay.models import Folder
from lensrelay.paths import path_index
from tests.lensrelay.test_change_feed import EVERYONE, in_another_process

pytestmark = pytest.mark.django_db(transaction=True)


async def a_vault(store: DocStore) -> Folder:
    folder = await store.db(folder_create, name="Lens")
    for name in ("A", "B", "C"):
        await document_create(store=store, folder=folder, path=f"/Notes/{name}.md", text=name)
    await folder_settled()
    return folder


def counting_row_reads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    reads: list[object] = []
    original = paths._rows_with_states

    def counted(folder_ids: Any = None) -> Any:
        reads.append(folder_ids)
        return original(folder_ids)

    monkeypatch.setattr(paths, "_rows_with_states", counted)
    return reads


async def test_a_restart_with_nothing_new_reads_the_rows_once(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    await a_vault(store)
    reads = counting_row_reads(monkeypatch)

    async def restarted(other: DocStore) -> set[str]:
        index = path_index(other)
        await index.ensure()
        await index.folders_loaded()  # in the background: the rows answered before
        await mirror_for(other).settled()  # the folder document's load-time mirroring
        return {e.user_path for e in index.all_entries() if e.is_markdown}

    found = await in_another_process(restarted)
    assert found == {"Lens/Notes/A.md", "Lens/Notes/B.md", "Lens/Notes/C.md"}
    assert reads == [None]  # the whole index once; the folder's load did not read its rows again


async def test_rows_mirrored_elsewhere_between_the_read_and_the_load_are_read_again(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await a_vault(store)
    reads = counting_row_reads(monkeypatch)
    counted = paths._rows_with_states

    def then_another_process_adds_a_note(folder_ids: Any = None) -> Any:
        result = counted(folder_ids)
        if len(reads) == 1:  # right after this process read the rows, before it loads the folder

            async def add() -> None:
                other = get_store()
                try:
                    await document_create(store=other, folder=folder, path="/Late.md", text="late")
                    await mirror_for(other).settled()
                finally:
                    await other.close()

            asyncio.run(add())  # on the database thread, which runs no event loop
        return result

    monkeypatch.setattr(paths, "_rows_with_states", then_another_process_adds_a_note)

    async def restarted(other: DocStore) -> bool:
        index = path_index(other)
        await index.ensure()
        await index.folders_loaded()  # in the background: the rows answered before
        await mirror_for(other).settled()
        return index.resolve(EVERYONE, "Lens/Late.md") is not None

    assert await in_another_process(restarted)
    assert reads == [None, [folder.id]]  # the folder's rows were read again: they had moved


async def test_paths_answer_before_the_folder_document_is_loaded_and_it_loads_after(store: Any) -> None:
    folder = await a_vault(store)

    async def restarted(other: DocStore) -> tuple[bool, bool, bool]:
        index = path_index(other)
        await index.ensure()
        answered = index.resolve(EVERYONE, "Lens/Notes/B.md") is not None
        loaded_at_once = folder.doc_id in other.rooms
        await index.folders_loaded()
        return answered, loaded_at_once, folder.doc_id in other.rooms

    assert await in_another_process(restarted) == (True, False, True)
