"""Names on disk the folder may not hold, the way out of the directory that is never taken, and
whole-or-nothing writes that never overwrite a save they have not seen."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lensrelay_sync.files import read_note, signature, write_note
from lensrelay_sync.paths import Refused, check_local, on_disk
from lensrelay_sync.state import State, StateMismatch


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/../escape.md", "'..' segment"),
        ("/Notes/../../escape.md", "'..' segment"),
        ("/_trash/Old.md", "trash"),
        ("/_TRASH./Old.md", "trash"),
        ("/%5Ftrash/Old.md", "trash"),
        ("/\uff3ftrash/Old.md", "trash"),
        ("/CON.md", "device name"),
        ("/Notes/nul.txt.md", "device name"),
        ("/com1.md", "device name"),
        ("/Trailing dot./x.md", "ends with a space or a dot"),
        ("/" + "x" * 300 + ".md", "longer than 255 bytes"),
        ("/".join(["", *["d" * 200] * 6, "x.md"]), "longer than 1024"),
        ("/Bad \udcff.md", "not UTF-8"),
        ("/.hidden.md", "hidden"),
        ("/a\u202eb.md", "invisible"),
        ("/Cafe\u0301.md", "NFC"),
    ],
)
def test_hostile_names_on_disk_are_refused_saying_why(path: str, said: str) -> None:
    with pytest.raises(Refused, match=said):
        check_local(path)


@pytest.mark.parametrize(
    "path", ["/Welcome.md", "/Notes/Café 😀 中文.md", "/Odd but fine. .md", "/CONSOLE.md"]
)
def test_ordinary_names_pass(path: str) -> None:
    assert check_local(path) == path


def test_nothing_is_placed_outside_the_directory(tmp_path: Path) -> None:
    root = (tmp_path / "vault").resolve()
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "Link").symlink_to(outside, target_is_directory=True)
    (root / "file.md").symlink_to(outside / "target.md")
    assert on_disk(root, "/Notes/Ideas.md") == root / "Notes" / "Ideas.md"
    for path, said in [
        ("/../x.md", "'..'"),
        ("/Link/x.md", "symbolic link"),
        ("/file.md", "symbolic link"),
        ("//x.md", "empty segment"),
        ("/_trash/x.md", "trash"),
    ]:
        with pytest.raises(Refused, match=said):
            on_disk(root, path)


def test_a_write_replaces_the_whole_file_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    note = tmp_path / "Note.md"
    assert write_note(note, "first 😀\n", expect=None, create=True) is not None
    found = read_note(note)
    assert found is not None and found[0] == "first 😀\n"
    os.chmod(note, 0o640)
    assert write_note(note, "second\n", expect=found[1]) == signature(note)
    assert note.read_text(encoding="utf-8") == "second\n"
    assert oct(note.stat().st_mode & 0o777) == oct(0o640)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Note.md"]


def test_a_write_never_overwrites_a_save_it_has_not_read(tmp_path: Path) -> None:
    note = tmp_path / "Note.md"
    write_note(note, "mine\n", expect=None, create=True)
    found = read_note(note)
    assert found is not None
    tmp = tmp_path / ".save.tmp"
    tmp.write_text("saved by the editor meanwhile\n", encoding="utf-8")
    os.replace(tmp, note)  # the editor's save: a new file renamed over
    assert write_note(note, "from the server\n", expect=found[1]) is None
    assert note.read_text(encoding="utf-8") == "saved by the editor meanwhile\n"
    # and a file that appeared meanwhile is not replaced by a "create" either
    other = tmp_path / "Other.md"
    other.write_text("made by hand\n", encoding="utf-8")
    assert write_note(other, "from the server\n", expect=None, create=True) is None


def test_a_save_right_after_a_write_is_not_taken_for_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = tmp_path / "Note.md"
    write_note(note, "mine\n", expect=None, create=True)
    found = read_note(note)
    assert found is not None
    replace = os.replace

    def then_the_editor_saves(src: str | Path, dst: str | Path) -> None:
        replace(src, dst)
        if Path(dst) == note:
            editor = tmp_path / ".save.tmp"
            editor.write_text("saved by the editor at once\n", encoding="utf-8")
            replace(editor, note)

    monkeypatch.setattr(os, "replace", then_the_editor_saves)
    written = write_note(note, "from the server\n", expect=found[1])
    monkeypatch.undo()
    # The signature returned is the server text's file, so the editor's save still reads as a change.
    assert written is not None and written != signature(note)
    assert note.read_text(encoding="utf-8") == "saved by the editor at once\n"


def test_the_state_file_round_trips_and_belongs_to_one_folder(tmp_path: Path) -> None:
    state = State()
    state.check(server="http://x", folder_doc="f" * 73, root=tmp_path)
    state.notes = {"u1": {"path": "/A 😀.md", "text": "text\n"}}
    state.folders = {"/Sub"}
    state.save(tmp_path)
    back = State.load(tmp_path)
    assert (back.notes, back.folders, back.folder_doc) == (state.notes, state.folders, state.folder_doc)
    # Entries are encoded once and again only when they change: changed, added and removed ones all land.
    state.notes = {"u1": {"path": "/A 😀.md", "text": 'text "quoted"\n'}, "u2": {"path": "/B.md", "text": ""}}
    state.save(tmp_path)
    state.notes = {"u2": {"path": "/C.md", "text": ""}}
    state.save(tmp_path)
    assert State.load(tmp_path).notes == state.notes
    with pytest.raises(StateMismatch, match="mirrors another folder"):
        back.check(server="http://x", folder_doc="g" * 73, root=tmp_path)
