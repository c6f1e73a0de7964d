"""On the live store: moving an image rewrites every embed of it, and backlinks_v0 lists embeds."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.docstore import folderdoc
from lensrelay.docstore.texts import text_cache
from lensrelay.vault import backlinks
from lensrelay.vault.documents import document_create
from lensrelay.vault.moves import FolderRef, move_entries
from tests.lensrelay.links.files_fixture import add_file_entry
from tests.lensrelay.vault.test_backlinks import backlinks_settle

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick_indexer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backlinks, "DEBOUNCE_SECONDS", 0.05)


def ref(folder: Any) -> FolderRef:
    return FolderRef(id=folder.pk, name=folder.name, doc_id=folder.doc_id)


async def test_moving_an_image_rewrites_its_embeds_in_every_linking_note(
    store: Any, make_folder: Any
) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    edu = await sync_to_async(make_folder)("Lens Edu")
    image = await add_file_entry(store, lens, "/Assets/diagram.png", "image")
    canvas = await add_file_entry(store, lens, "/Boards/plan.canvas", "canvas")
    note = await document_create(
        store=store,
        folder=lens,
        path="/Notes/Ideas.md",
        text="![[diagram.png|300]] and ![[../Assets/diagram.png]] [[plan.canvas]] `![[diagram.png]]`\n",
    )
    other = await document_create(
        store=store, folder=edu, path="/Syllabus.md", text="![[Lens/Assets/diagram.png]]\n"
    )
    report = await move_entries(
        store,
        source=ref(lens),
        target=ref(lens),
        old="/Assets/diagram.png",
        new="/Media/Figure 1.png",
        folder=False,
    )
    texts = await text_cache(store).get_many([note.doc_id, other.doc_id])
    # the embed in inline code is no link and stays as written
    assert texts[note.doc_id] == (
        "![[Figure 1.png|300]] and ![[../Media/Figure 1.png]] [[plan.canvas]] `![[diagram.png]]`\n"
    )
    assert texts[other.doc_id] == "![[Lens/Media/Figure 1.png]]\n"
    assert (report.links_rewritten, report.documents_rewritten) == (3, 2)
    entries = folderdoc.entries((await store.get(lens.doc_id)).doc)
    assert (
        entries["/Media/Figure 1.png"].uuid == image.uuid and entries["/Media/Figure 1.png"].type == "image"
    )
    assert "/Assets/diagram.png" not in entries
    # backlinks_v0 (within the folder) records the embeds, keyed by the files' ids
    want = {image.uuid: [note.uuid], canvas.uuid: [note.uuid]}
    assert await backlinks_settle(store, lens, want) == want
