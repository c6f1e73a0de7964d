"""Between whole scans, the directories whose modification time changed are listed again: a note saved there
by rename (as editors save) is marked at once, and a name that came or went asks for a whole scan."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from lensrelay_sync.files import signature
from lensrelay_sync.mirror import Mirror, Note
from lensrelay_sync.server import Folder, Server

NAMES = {"Top.md": "t", "A/One.md": "1", "A/Deep/Two.md": "2", "B/Three.md": "3"}


@pytest.fixture
def mirror(tmp_path: Path) -> Mirror:
    for name, text in NAMES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    folder = Folder("Vault", "a" * 36 + "-" + "b" * 36)
    mirror = Mirror(root=tmp_path, server=Server("http://127.0.0.1:1", "t"), folder=folder, writable=True)
    for n, (name, text) in enumerate(NAMES.items()):
        mirror.notes[str(n)] = Note(str(n), f"/{name}", text, sig=signature(tmp_path / name), dirty=False)
    mirror._listed = mirror._scan().listed
    tick()
    return mirror


def tick() -> None:
    """Past the clock tick of the last listing: file times are coarse (a jiffy), and a change within the
    same tick is left to the next whole scan, as the client does."""
    time.sleep(0.03)


def editor_save(path: Path, text: str) -> None:
    temp = path.parent / f".{path.name}.tmp"
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def dirty(mirror: Mirror) -> set[str]:
    return {note.path for note in mirror.notes.values() if note.dirty}


def test_a_save_by_rename_is_found_by_listing_its_directory_only(mirror: Mirror, tmp_path: Path) -> None:
    assert mirror._look_at_changed_dirs() is False and dirty(mirror) == set()
    editor_save(tmp_path / "A" / "Deep" / "Two.md", "2 saved")
    assert mirror._look_at_changed_dirs() is False
    assert dirty(mirror) == {"/A/Deep/Two.md"}
    # Listed again with its new time: nothing more to find there until the next change.
    mirror.notes["2"].dirty = False
    assert mirror._look_at_changed_dirs() is False and dirty(mirror) == set()


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "B" / "New.md").write_text("new", encoding="utf-8"),
        lambda root: (root / "A" / "One.md").rename(root / "A" / "Renamed.md"),
        lambda root: shutil.rmtree(root / "A" / "Deep"),
        lambda root: (root / "C").mkdir(),
    ],
    ids=["created", "renamed", "directory removed", "directory made"],
)
def test_a_name_that_came_or_went_asks_for_a_whole_scan(
    mirror: Mirror, tmp_path: Path, change: object
) -> None:
    change(tmp_path)  # type: ignore[operator]
    assert mirror._look_at_changed_dirs() is True


def test_hidden_names_such_as_editors_temporary_files_ask_for_nothing(mirror: Mirror, tmp_path: Path) -> None:
    (tmp_path / "A" / ".One.md.swp").write_text("x", encoding="utf-8")
    assert mirror._look_at_changed_dirs() is False and dirty(mirror) == set()
