"""Moves of documents and sub-folders: refused with nothing changed, or carried out fully (entries, links,
rows), within a folder and across folders."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from hypothesis import given, settings
from hypothesis import strategies as st

from lensrelay.docstore import folderdoc
from lensrelay.docstore.folderdoc import FileEntry
from lensrelay.docstore.texts import TextCache, text_cache
from lensrelay.models import Document, Folder
from lensrelay.text.vaultpath import InvalidPath
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_settled
from lensrelay.vault.moves import FolderRef, MovePlan, MoveRefused, move_entries, plan_move

ENTRIES = {
    "/Welcome.md": FileEntry("/Welcome.md", "u-welcome", "markdown"),
    "/Notes": FileEntry("/Notes", "u-notes", "folder"),
    "/Notes/Ideas.md": FileEntry("/Notes/Ideas.md", "u-ideas", "markdown"),
    "/Notes/Deep/Dive.md": FileEntry(
        "/Notes/Deep/Dive.md", "u-dive", "markdown"
    ),  # "/Notes/Deep" has no entry
    "/Notes/pic.png": FileEntry("/Notes/pic.png", "u-pic", "image"),
    "/Archive": FileEntry("/Archive", "u-archive", "folder"),
}


def plan(old: str, new: str, *, folder: bool = False, target: dict[str, FileEntry] | None = None) -> MovePlan:
    return plan_move(source_entries=ENTRIES, target_entries=target, old=old, new=new, folder=folder)


# -- planning --------------------------------------------------------------------------------------------


def test_a_document_move_adds_entries_for_missing_parent_folders() -> None:
    assert plan("/Notes/Ideas.md", "/Archive/2026/Q4/Ideas.md") == MovePlan(
        moves={"/Notes/Ideas.md": "/Archive/2026/Q4/Ideas.md"},
        new_folders=("/Archive/2026", "/Archive/2026/Q4"),
    )


def test_a_folder_move_takes_everything_under_it() -> None:
    assert plan("/Notes", "/Archive/Old Notes", folder=True) == MovePlan(
        moves={
            "/Notes": "/Archive/Old Notes",
            "/Notes/Ideas.md": "/Archive/Old Notes/Ideas.md",
            "/Notes/Deep/Dive.md": "/Archive/Old Notes/Deep/Dive.md",
            "/Notes/pic.png": "/Archive/Old Notes/pic.png",
        },
        new_folders=("/Archive/Old Notes/Deep",),  # it never had an entry; now it has one
    )


def test_a_sub_folder_without_an_entry_of_its_own_gets_one() -> None:
    assert plan("/Notes/Deep", "/Deep", folder=True) == MovePlan(
        moves={"/Notes/Deep/Dive.md": "/Deep/Dive.md"}, new_folders=("/Deep",)
    )


def test_a_case_only_rename_is_allowed() -> None:
    assert plan("/Notes", "/notes", folder=True).moves["/Notes/Ideas.md"] == "/notes/Ideas.md"


def test_across_folders_collisions_are_checked_in_the_target() -> None:
    target = {"/Ideas.md": FileEntry("/Ideas.md", "x", "markdown")}
    assert plan("/Notes/Ideas.md", "/Kept/Ideas.md", target=target).new_folders == ("/Kept",)
    with pytest.raises(MoveRefused, match="only by letter case"):
        plan("/Notes/Ideas.md", "/ideas.md", target=target)
    # the same path is free in another folder
    assert plan("/Welcome.md", "/Welcome.md", target=target).moves == {"/Welcome.md": "/Welcome.md"}


@pytest.mark.parametrize(
    ("old", "new", "folder", "reason"),
    [
        ("/Notes/Ideas.md", "/Welcome.md", False, "already exists"),
        ("/Notes/Ideas.md", "/WELCOME.md", False, "only by letter case"),  # clashes on case-insensitive disks
        ("/Notes", "/Archive", True, "already exists"),
        ("/Notes", "/Welcome.md", True, "already exists"),
        ("/Notes", "/Notes/Sub", True, "into itself"),
        ("/Notes", "/notes/Deeper/Sub", True, "into itself"),
        ("/Notes", "/Notes", True, "already there"),
        ("/Welcome.md", "/Welcome.md", False, "already there"),
        ("/Welcome.md", "/Welcome.md/Inside.md", False, "into itself"),
        ("/Notes/Ideas.md", "/Welcome.md/Inside.md", False, "is inside the document"),
        ("/Welcome.md", "/archive/Welcome.md", False, "spelled"),
        ("/Missing.md", "/Found.md", False, "not found"),
        ("/Notes", "/Moved.md", False, "not found"),  # a folder is not a document
        ("/Welcome.md", "/Elsewhere", True, "not found"),  # nor a document a folder
        ("/Nowhere", "/Somewhere", True, "not found"),
        ("/Welcome.md", "/../Welcome.md", False, "Invalid target"),
        ("/Welcome.md", "//Welcome.md", False, "Invalid target"),
        ("/Welcome.md", "/", False, "Invalid target"),
        ("/Welcome.md", "/a\x00b.md", False, "Invalid target"),
        ("/Notes", "/" + "x" * 1020, True, "Invalid target"),  # fine alone, too long with what is under it
    ],
)
def test_refusals(old: str, new: str, folder: bool, reason: str) -> None:
    with pytest.raises(MoveRefused, match=reason):
        plan(old, new, folder=folder)


# -- carrying out moves on the live store --------------------------------------------------------------

pytestmark = pytest.mark.django_db(transaction=True)


def ref(folder: Folder) -> FolderRef:
    return FolderRef(id=folder.pk, name=folder.name, doc_id=folder.doc_id)


async def vault(store: Any, make_folder: Any) -> tuple[Folder, Folder, dict[str, Document]]:
    lens = await sync_to_async(make_folder)("Lens")
    edu = await sync_to_async(make_folder)("Lens Edu")
    documents = {
        "welcome": await document_create(
            store=store, folder=lens, path="/Welcome.md", text="[[Notes/Ideas#Top|ideas]] [[Deep/Dive]]\n"
        ),
        "ideas": await document_create(
            store=store,
            folder=lens,
            path="/Notes/Ideas.md",
            text="# Ideas\n[[../Welcome]] [[Deep/Dive|dive]]\n",
        ),
        "dive": await document_create(
            store=store,
            folder=lens,
            path="/Notes/Deep/Dive.md",
            text="[[../../Welcome]] [[../../../Lens Edu/Syllabus]]\n",
        ),
        "syllabus": await document_create(
            store=store, folder=edu, path="/Syllabus.md", text="[[../Lens/Notes/Ideas]] [[Lens/Welcome]]\n"
        ),
    }
    return lens, edu, documents


async def snapshot(store: Any, lens: Folder, edu: Folder, documents: dict[str, Document]) -> Any:
    rooms = [await store.get(folder.doc_id) for folder in (lens, edu)]
    texts = await text_cache(store).get_many(d.doc_id for d in documents.values())
    rows = await sync_to_async(lambda: sorted(Document.objects.values_list("folder_id", "path", "doc_id")))()
    return (
        [folderdoc.entries(room.doc) for room in rooms],
        [folderdoc.maps(room.doc)[1].to_py() for room in rooms],
        texts,
        rows,
    )


async def test_new_documents_get_folder_entries_for_their_sub_folders(store: Any, make_folder: Any) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    await document_create(store=store, folder=lens, path="/A/B/C.md", text="x")
    await document_create(store=store, folder=lens, path="/A/D.md", text="y")
    room = await store.get(lens.doc_id)
    entries = folderdoc.entries(room.doc)
    assert {path: entry.type for path, entry in entries.items()} == {
        "/A": "folder",
        "/A/B": "folder",
        "/A/B/C.md": "markdown",
        "/A/D.md": "markdown",
    }
    filemeta = folderdoc.maps(room.doc)[0].to_py()
    assert filemeta["/A"] == {"id": entries["/A"].uuid, "type": "folder", "version": 0}
    assert "/A" not in folderdoc.maps(room.doc)[1].to_py()  # the legacy map lists files only
    with pytest.raises(InvalidPath, match="is inside the document"):
        await document_create(store=store, folder=lens, path="/A/D.md/E.md", text="z")


async def test_renaming_a_folder_moves_everything_and_keeps_every_link(store: Any, make_folder: Any) -> None:
    lens, _, documents = await vault(store, make_folder)
    report = await move_entries(
        store, source=ref(lens), target=ref(lens), old="/Notes", new="/Archive/Old Notes", folder=True
    )
    texts = await text_cache(store).get_many(d.doc_id for d in documents.values())
    assert texts[documents["welcome"].doc_id] == "[[Archive/Old Notes/Ideas#Top|ideas]] [[Deep/Dive]]\n"
    assert texts[documents["ideas"].doc_id] == "# Ideas\n[[../../Welcome]] [[Deep/Dive|dive]]\n"
    assert texts[documents["dive"].doc_id] == "[[../../../Welcome]] [[../../../../Lens Edu/Syllabus]]\n"
    assert texts[documents["syllabus"].doc_id] == "[[../Lens/Archive/Old Notes/Ideas]] [[Lens/Welcome]]\n"
    assert report.links_rewritten == 5
    entries = folderdoc.entries((await store.get(lens.doc_id)).doc)
    assert {p: e.type for p, e in entries.items()} == {
        "/Welcome.md": "markdown",
        "/Archive": "folder",
        "/Archive/Old Notes": "folder",
        "/Archive/Old Notes/Ideas.md": "markdown",
        "/Archive/Old Notes/Deep": "folder",
        "/Archive/Old Notes/Deep/Dive.md": "markdown",
    }
    # same content documents, same ids, same rows
    assert entries["/Archive/Old Notes/Ideas.md"].uuid == documents["ideas"].uuid
    row = await Document.objects.aget(doc_id=documents["ideas"].doc_id)
    assert (row.pk, row.path) == (documents["ideas"].pk, "/Archive/Old Notes/Ideas.md")


async def test_a_note_moves_into_another_folder_keeping_its_content_document(
    store: Any, make_folder: Any
) -> None:
    lens, edu, documents = await vault(store, make_folder)
    ideas = documents["ideas"]
    report = await move_entries(
        store, source=ref(lens), target=ref(edu), old="/Notes/Ideas.md", new="/Week 2/Ideas.md", folder=False
    )
    assert report.moved == {ideas.doc_id: "/Week 2/Ideas.md"}
    lens_entries = folderdoc.entries((await store.get(lens.doc_id)).doc)
    edu_room = await store.get(edu.doc_id)
    edu_entries = folderdoc.entries(edu_room.doc)
    assert "/Notes/Ideas.md" not in lens_entries and "/Notes" in lens_entries  # the emptied folder stays
    assert edu_entries["/Week 2/Ideas.md"].uuid == ideas.uuid and edu_entries["/Week 2"].type == "folder"
    assert folderdoc.maps(edu_room.doc)[1].to_py()["/Week 2/Ideas.md"] == ideas.uuid
    row = await Document.objects.select_related("folder").aget(doc_id=ideas.doc_id)
    assert (row.pk, row.folder.name, row.path) == (ideas.pk, "Lens Edu", "/Week 2/Ideas.md")
    await folder_settled()
    row = await Document.objects.select_related("folder").aget(doc_id=ideas.doc_id)
    assert (row.pk, row.folder.name, row.path) == (ideas.pk, "Lens Edu", "/Week 2/Ideas.md")
    texts = await text_cache(store).get_many(d.doc_id for d in documents.values())
    assert texts[ideas.doc_id] == "# Ideas\n[[../../Lens/Welcome]] [[Lens/Notes/Deep/Dive|dive]]\n"
    assert texts[documents["welcome"].doc_id] == "[[Lens Edu/Week 2/Ideas#Top|ideas]] [[Deep/Dive]]\n"
    assert texts[documents["syllabus"].doc_id] == "[[./Week 2/Ideas]] [[Lens/Welcome]]\n"


@pytest.mark.parametrize(
    ("old", "new", "folder", "into_edu"),
    [
        ("/Notes", "/Notes/Inner", True, False),
        ("/Notes/Ideas.md", "/Welcome.md", False, False),
        ("/Notes/Ideas.md", "/Syllabus.md", False, True),
        ("/Notes/Ideas.md", "/Welcome.md/Ideas.md", False, False),
        ("/Notes/Ideas.md", "/../Ideas.md", False, False),
        ("/Notes", "/syllabus.md", True, True),
        ("/Gone.md", "/Here.md", False, False),
    ],
)
async def test_refused_moves_change_nothing(
    store: Any, make_folder: Any, old: str, new: str, folder: bool, into_edu: bool
) -> None:
    lens, edu, documents = await vault(store, make_folder)
    await folder_settled()
    before = await snapshot(store, lens, edu, documents)
    with pytest.raises(MoveRefused):
        await move_entries(
            store, source=ref(lens), target=ref(edu if into_edu else lens), old=old, new=new, folder=folder
        )
    await folder_settled()
    assert await snapshot(store, lens, edu, documents) == before


# -- generated folders -----------------------------------------------------------------------------------

SEGMENTS = st.sampled_from(["Notes", "notes", "Deep", "Archive", "Café ☕", "Ideas.md", "Plan.md", "x.png"])


def _fits(entries: dict[str, FileEntry], path: str, kind: str) -> bool:
    """Whether a vault on a case-insensitive disk could hold ``path`` next to ``entries``."""
    spelled = {p.lower(): p for p in entries}
    folders = {q.lower(): q for p in entries for q in folderdoc.parent_paths(p)}
    if path.lower() in spelled or (kind != "folder" and path.lower() in folders):
        return False
    if folders.get(path.lower(), path) != path:
        return False
    for parent in folderdoc.parent_paths(path):
        existing = spelled.get(parent.lower())
        if (existing is not None and (existing != parent or entries[existing].type != "folder")) or (
            folders.get(parent.lower(), parent) != parent
        ):
            return False
    return True


@st.composite
def folder_and_move(draw: st.DrawFn) -> tuple[dict[str, FileEntry], str, str, bool]:
    entries: dict[str, FileEntry] = {}
    for segments in draw(st.lists(st.lists(SEGMENTS, min_size=1, max_size=4), max_size=12)):
        path = "/" + "/".join(segments)
        kind = "markdown" if path.endswith(".md") else "folder" if "." not in segments[-1] else "image"
        if not _fits(entries, path, kind):
            continue
        entries[path] = FileEntry(path, f"u{len(entries)}", kind)
        for parent in folderdoc.parent_paths(path):
            if parent not in entries and draw(st.booleans()):  # some sub-folders lack entries
                entries[parent] = FileEntry(parent, f"u{len(entries)}", "folder")
    known = sorted({*entries, *(p for path in entries for p in folderdoc.parent_paths(path))} or {"/Notes"})
    old = draw(st.sampled_from(known))
    new = "/" + "/".join(draw(st.lists(SEGMENTS, min_size=1, max_size=4)))
    return entries, old, new, draw(st.booleans())


@given(folder_and_move())
@settings(max_examples=500, deadline=None)
def test_a_planned_move_leaves_a_well_formed_folder_and_a_refused_one_says_why(case: Any) -> None:
    entries, old, new, folder = case
    try:
        planned = plan_move(source_entries=entries, target_entries=None, old=old, new=new, folder=folder)
    except MoveRefused as exc:
        assert re.search(
            "not found|already exists|already there|into itself|not a folder|spelled|only by letter case"
            "|inside the document|holds other entries",
            str(exc),
        )
        return
    after = {path: entry for path, entry in entries.items() if path not in planned.moves}
    collisions = [path for path in planned.moves.values() if path in after]
    assert collisions == []
    after.update({planned.moves[path]: entries[path] for path in planned.moves})
    after.update({path: FileEntry(path, "new", "folder") for path in planned.new_folders})
    assert len(after) == len(entries) + len(planned.new_folders)  # nothing lost, nothing doubled
    assert len({path.lower() for path in after}) == len(after)  # no clash on a case-insensitive disk
    for path in planned.moves.values():
        assert path == new or path.startswith(new + "/")
        assert all(after[parent].type == "folder" for parent in folderdoc.parent_paths(path))
    moved_back = plan_move(source_entries=after, target_entries=None, old=new, new=old, folder=folder).moves
    assert {moved_back[to]: to for to in planned.moves.values()} == {
        o: planned.moves[o] for o in planned.moves
    }


async def test_a_folder_changed_while_the_move_is_prepared_refuses_it_with_nothing_moved(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lens, _, documents = await vault(store, make_folder)
    lens_room = await store.get(lens.doc_id)
    original = TextCache.get_many

    arrived = 0

    async def meanwhile_a_client_adds_a_note(self: TextCache, doc_ids: Any) -> dict[str, str]:
        nonlocal arrived
        arrived += 1  # a new one every time: the move starts over and finds the folder changed again
        with lens_room.transact():  # what a Relay client does in the folder document
            folderdoc.add_entry(
                lens_room.doc,
                path=f"/Notes/Arrived {arrived}.md",
                uuid=f"{arrived:08d}-0000-4000-8000-" + "0" * 12,
            )
        return await original(self, doc_ids)

    monkeypatch.setattr(TextCache, "get_many", meanwhile_a_client_adds_a_note)
    before = folderdoc.entries(lens_room.doc)
    texts = await original(text_cache(store), [d.doc_id for d in documents.values()])
    with pytest.raises(MoveRefused, match="changed while the move was prepared"):
        await move_entries(store, source=ref(lens), target=ref(lens), old="/Notes", new="/Old", folder=True)
    monkeypatch.undo()
    after = folderdoc.entries(lens_room.doc)
    assert {path: entry for path, entry in after.items() if not path.startswith("/Notes/Arrived")} == before
    assert await text_cache(store).get_many(d.doc_id for d in documents.values()) == texts


async def test_a_move_prepared_while_another_worker_changed_the_folder_starts_over(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lens, _, documents = await vault(store, make_folder)
    room = await store.get(lens.doc_id)
    cache = text_cache(store)
    get_many = cache.get_many
    calls = 0

    async def meanwhile(doc_ids: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:  # as another worker's move would: the folder the move needs appears meanwhile
            with room.transact():
                folderdoc.add_folder_entries(room.doc, paths=("/Archive",))
        return await get_many(doc_ids)

    monkeypatch.setattr(cache, "get_many", meanwhile)
    report = await move_entries(
        store,
        source=ref(lens),
        target=ref(lens),
        old="/Notes/Ideas.md",
        new="/Archive/Ideas.md",
        folder=False,
    )
    assert calls >= 2  # prepared again after the change
    assert report.moved == {documents["ideas"].doc_id: "/Archive/Ideas.md"}
    entries = folderdoc.entries(room.doc)
    assert entries["/Archive"].type == "folder" and "/Archive/Ideas.md" in entries
