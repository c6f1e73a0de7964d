"""The one extension table: Relay's types, text or not, Y.Text or blob."""

from __future__ import annotations

import pytest

from lensrelay.files.kinds import extension, file_kind, is_text_file, mimetype, stored_as_text


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/Notes/Idea.md", "markdown"),
        ("/a/Board.canvas", "canvas"),
        ("/img/Diagram.PNG", "image"),
        ("/photo.jpeg", "image"),
        ("/paper.pdf", "pdf"),
        ("/talk.mp3", "audio"),
        ("/clip.mp4", "video"),
        ("/data.json", "file"),
        ("/page.html", "file"),
        ("/no-extension", "file"),
        ("/.hidden", "file"),
        ("/dir.d/archive.tar.gz", "file"),
    ],
)
def test_file_kind_follows_relay_types(path: str, kind: str) -> None:
    assert file_kind(path) == kind


def test_text_and_storage_by_extension() -> None:
    assert stored_as_text("/a.md") and stored_as_text("/b.HTML") and stored_as_text("/c.htm")
    # JSON and canvas are text to read, but their content is a blob (byte-identical round trips).
    for path in ("/d.json", "/e.canvas"):
        assert is_text_file(path) and not stored_as_text(path)
    for path in ("/f.png", "/g.pdf", "/h", "/i.bin"):
        assert not is_text_file(path) and not stored_as_text(path)
    assert extension("/x/.gitignore") == "" and extension("/x/Name.Tar.GZ") == "gz"


def test_mimetypes() -> None:
    assert mimetype("/a.png") == "image/png"
    assert mimetype("/b.pdf") == "application/pdf"
    assert mimetype("/c.canvas") == "application/json"
    assert mimetype("/d.unknownext") == "application/octet-stream"
