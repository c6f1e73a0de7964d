"""The path index on a restart: built from one compact query, not read again when nothing moved since, and
read again when another process mirrored meanwhile."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lensrelay.docstore.store import DocStore, get_store
from lensrelay.docstore.trashdoc import TRASH
from lensrelay.models import Document, Folder
from lensrelay.vault import paths
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create, folder_settled, mirror_for
from lensrelay.vault.paths import DocEntry, path_index
from tests.lensrelay.test_change_feed import EVERYONE, in_another_process

pytestmark = pytest.mark.django_db(transaction=True)


async def a_vault(store: DocStore) -> Folder:
    folder = await store.db(folder_create, name="Lens")
    for name in ("A", "B", "C"):
        await document_create(store=store, folder=folder, path=f"/Notes/{name}.md", text=name)
    await folder_settled()
    return folder


def counting_row_reads(store: DocStore, reads: list[object]) -> None:
    """Record in `reads` the folders each row read of `store`'s path index asks for (None: every folder).
    Only this store's: the test's own store may read its index meanwhile, when its debounced derived work
    (backlinks, a second after an edit) runs on a slow machine."""
    db = store.db

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is paths._rows_with_states:
            reads.append(args[0] if args else None)
        return await db(fn, *args, **kwargs)

    store.db = counted  # type: ignore[method-assign]


async def test_a_restart_with_nothing_new_reads_the_rows_once(store: Any) -> None:
    await a_vault(store)
    reads: list[object] = []

    async def restarted(other: DocStore) -> set[str]:
        counting_row_reads(other, reads)
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
    reads: list[object] = []
    added: list[bool] = []
    read_rows = paths._rows_with_states

    def then_another_process_adds_a_note(folder_ids: Any = None) -> Any:
        result = read_rows(folder_ids)
        if len(reads) == 1 and not added:  # right after this process read the rows, before the folder loads
            added.append(True)

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
        counting_row_reads(other, reads)
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


async def test_the_folder_documents_load_after_the_request_that_built_the_index_has_finished(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loading a 100,000-entry folder document holds the event loop for a second: the first answer goes
    # out first. The bound is set far out, so it is not what starts the load here.
    folder = await a_vault(store)
    monkeypatch.setattr(paths, "FOLDER_DOCS_WAIT", 60.0)

    async def restarted(other: DocStore) -> tuple[bool, bool, bool]:
        index = path_index(other)

        async def request() -> bool:
            await index.ensure()
            await asyncio.sleep(0.2)  # the answer's own work: long enough for the load to have run
            return folder.doc_id in other.rooms

        loaded_during = await asyncio.create_task(request())
        await asyncio.wait_for(index.folders_loaded(now=False), timeout=10)  # started by its end
        caught_up = index.resolve(EVERYONE, "Lens/Notes/C.md") is not None
        return loaded_during, folder.doc_id in other.rooms, caught_up

    assert await in_another_process(restarted) == (False, True, True)


async def test_a_caller_that_lives_on_holds_the_folder_documents_back_only_so_long(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await a_vault(store)
    monkeypatch.setattr(paths, "FOLDER_DOCS_WAIT", 0.05)

    async def restarted(other: DocStore) -> bool:
        index = path_index(other)
        await index.ensure()  # this task goes on: only the bound starts the load
        await asyncio.wait_for(index.folders_loaded(now=False), timeout=10)
        return folder.doc_id in other.rooms

    assert await in_another_process(restarted)


async def test_waiting_for_the_folder_documents_starts_their_load_at_once(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await a_vault(store)
    monkeypatch.setattr(paths, "FOLDER_DOCS_WAIT", 60.0)

    async def restarted(other: DocStore) -> bool:
        index = path_index(other)
        await index.ensure()
        await asyncio.wait_for(index.folders_loaded(), timeout=10)  # not after this task, nor the bound
        return folder.doc_id in other.rooms

    assert await in_another_process(restarted)


def rows_as_before(folder_ids: Any = None) -> list[DocEntry]:
    """The rows as `_rows` read them through Django's iteration and DocEntry's own constructor."""
    folders = dict(paths._folders_by_id())
    documents = Document.objects.exclude(path=TRASH).exclude(path__startswith=TRASH + "/")
    if folder_ids is not None:
        documents = documents.filter(folder_id__in=list(folder_ids))
    return [
        DocEntry.of(
            doc_id=doc_id,
            folder_id=folder_id,
            folder_name=folders[folder_id][0],
            folder_doc_id=folders[folder_id][1],
            path=path,
            type=type_,
        )
        for doc_id, folder_id, path, type_ in documents.values_list("doc_id", "folder_id", "path", "type")
    ]


async def test_the_rows_read_on_a_plain_cursor_are_the_entries_django_read(store: Any) -> None:
    lens = await a_vault(store)
    other = await store.db(folder_create, name="Archive")
    await document_create(store=store, folder=other, path="/Old/Z.md", text="z")
    await document_create(store=store, folder=other, path="/_trashy.md", text="not in the trash")
    await folder_settled()

    def add_rows() -> None:  # what the index must leave out or keep, whatever mirroring would write
        for n, (path, type_) in enumerate(
            [
                (TRASH, "folder"),
                (f"{TRASH}/Gone.md", "markdown"),
                ("/Pics", "folder"),
                ("/Pics/a.png", "image"),
            ]
        ):
            Document.objects.create(
                folder=lens, uuid=f"u{n}", doc_id=f"{lens.doc_id[:36]}-u{n}", path=path, type=type_
            )

    await store.db(add_rows)
    await folder_settled()
    # Neither read orders its rows, and PostgreSQL returns rows updated since in another order.
    expected = sorted(await store.db(rows_as_before))
    rows = sorted(await store.db(paths._rows))
    assert rows == expected
    assert [e.user_path for e in rows] == [e.user_path for e in expected]
    assert [e._asdict() for e in rows] == [e._asdict() for e in expected]  # user_path computed alike
    assert all(type(e) is DocEntry for e in rows)
    assert all(e.user_path == e.folder_name + e.path for e in rows)
    assert {e.path for e in rows} >= {"/Pics", "/Pics/a.png", "/_trashy.md", "/Old/Z.md"}
    assert not {e.path for e in rows} & {TRASH, f"{TRASH}/Gone.md"}
    assert sorted(await store.db(paths._rows, [other.id])) == sorted(
        await store.db(rows_as_before, [other.id])
    )
    assert await store.db(paths._rows, []) == []

    # A fresh index, as a restarted process builds it: this store's own may have been built before the
    # rows above were added behind mirroring's back (its derived work reads it a second after an edit).
    async def fresh_index(other: DocStore) -> tuple[dict[str, DocEntry], dict[str, DocEntry]]:
        index = path_index(other)
        await index.ensure()
        return dict(index._by_path), dict(index._by_doc_id)

    by_path, by_doc_id = await in_another_process(fresh_index)
    assert by_path == {e.user_path: e for e in expected}
    assert by_doc_id == {e.doc_id: e for e in expected}
    hash(rows[0])  # hashable, and immutable
    with pytest.raises(AttributeError):
        rows[0].path = "/elsewhere"  # type: ignore[misc]


async def test_a_folder_whose_targets_did_not_change_keeps_its_set_through_a_reread(store: Any) -> None:
    """Link graphs take the very set they hold as unchanged without comparing its thousands of targets;
    a re-read that finds the same entries hands them that set, and a new note a new one."""
    folder = await a_vault(store)
    index = path_index(store)
    await index.ensure()
    before = index.folder_link_targets(folder.pk)
    await index.refresh_folder(folder.pk)  # the rows read again: a new generation
    assert index.folder_link_targets(folder.pk) is before
    await document_create(store=store, folder=folder, path="/Notes/D.md", text="D")
    await folder_settled()
    await index.refresh_folder(folder.pk)
    after = index.folder_link_targets(folder.pk)
    assert after is not before and {t.path for t in after} == {t.path for t in before} | {"/Notes/D.md"}
