"""Which files are mirrored as attachments and with which entry type, whole-or-nothing byte writes, and the
attachments' hashes kept in the state file (the transfers themselves: tests/e2e/test_folder_sync.py)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from lensrelay_sync.attachments import is_attachment, kind_of, mimetype, sha256_file
from lensrelay_sync.files import signature, write_file
from lensrelay_sync.state import State


@pytest.mark.parametrize(
    ("name", "mirrored"),
    [
        ("diagram.png", True),
        ("Paper.PDF", True),
        ("Board.canvas", True),
        ("data.json", True),
        ("archive.tar.gz", True),
        ("Makefile", True),
        ("page.html", False),  # live text on the server, not a blob
        ("page.HTM", False),
        ("Old.markdown", False),
        ("movie.mp4.part", False),  # a download under way
        ("report.pdf.crdownload", False),
        ("notes.txt~", False),
    ],
)
def test_which_files_are_attachments(name: str, mirrored: bool) -> None:
    assert is_attachment(name) is mirrored


def test_entry_types_and_content_types_are_those_of_relay_clients() -> None:
    assert kind_of("/Images/a.PNG") == "image"
    assert kind_of("/b.pdf") == "pdf"
    assert kind_of("/c.canvas") == "canvas"
    assert kind_of("/d.mp3") == "audio" and kind_of("/e.webm") == "video"
    assert kind_of("/f.bin") == kind_of("/Makefile") == kind_of("/.png") == "file"
    assert mimetype("/a.png") == "image/png" and mimetype("/c.canvas") == "application/json"
    assert mimetype("/no-extension") == "application/octet-stream"


def test_write_file_is_whole_and_never_overwrites_a_save_it_has_not_seen(tmp_path: Path) -> None:
    target = tmp_path / "Sub" / "pic.png"
    first = write_file(target, b"\x89PNG one", expect=None, create=True)
    assert first is not None and target.read_bytes() == b"\x89PNG one"
    target.write_bytes(b"saved by someone else")
    assert write_file(target, b"\x89PNG two", expect=first) is None
    assert target.read_bytes() == b"saved by someone else"
    now = signature(target)
    assert write_file(target, bytes(range(256)), expect=now) is not None
    assert target.read_bytes() == bytes(range(256))
    assert [p.name for p in target.parent.iterdir()] == ["pic.png"]  # no temporary file left


def test_sha256_file_reads_in_chunks(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 7)
    (tmp_path / "big.bin").write_bytes(data)
    assert sha256_file(tmp_path / "big.bin") == hashlib.sha256(data).hexdigest()


def test_the_state_file_keeps_the_attachments_hashes(tmp_path: Path) -> None:
    state = State(server="http://x", folder_doc="f" * 36)
    state.files = {"/Images/a.png": {"id": "u1", "hash": "ab" * 32}}
    state.save(tmp_path)
    again = State.load(tmp_path)
    assert again.files == state.files
    # A state file written before attachments were synced has none.
    (tmp_path / ".lensrelay-sync.json").write_text(
        '{"version": 1, "server": "s", "folder_doc": "d", "notes": {}}', encoding="utf-8"
    )
    assert State.load(tmp_path).files == {}
