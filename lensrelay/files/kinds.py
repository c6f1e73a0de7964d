"""What a file is, from its name: its `filemeta_v0` type, whether it is text, and where its content lives.

One table for the whole server. The types are those of Relay.md clients (`SyncType`: folder, markdown,
canvas, image, pdf, audio, video, file); a Relay client also decides a file's type by its extension, so the
server answering with the same table keeps both sides agreeing.

Where the content lives:
- markdown (`.md`) and HTML (`.html`, `.htm`) are collaborative `Y.Text("contents")` documents; HTML is
  raw text (no CriticMarkup), as lens-relay does;
- every other file, `.json` and `.canvas` included, is an immutable content-addressed blob
  (`files/<doc id>/<sha256>`) named by the entry's `hash`. Relay keeps a live canvas in a Y.Doc of nodes
  and edges; this server stores a canvas as its bytes instead, so an import and export stay byte-identical
  (Obsidian's own formatting of the JSON included) and assistants read the file Obsidian wrote. Its entry
  keeps Relay's `canvas` type.
"""

from __future__ import annotations

import mimetypes
import posixpath
import time
from typing import Any

MARKDOWN = "markdown"
CANVAS = "canvas"
IMAGE = "image"
PDF = "pdf"
AUDIO = "audio"
VIDEO = "video"
FILE = "file"
FOLDER = "folder"

# Extension (lower case, no dot) -> filemeta type; anything else is a plain "file".
_TYPES: dict[str, str] = {
    "md": MARKDOWN,
    "markdown": MARKDOWN,
    "canvas": CANVAS,
    "pdf": PDF,
    **dict.fromkeys(
        ("png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "ico", "tif", "tiff", "heic"), IMAGE
    ),
    **dict.fromkeys(("mp3", "wav", "m4a", "3gp", "flac", "ogg", "oga", "opus", "aac"), AUDIO),
    **dict.fromkeys(("mp4", "webm", "ogv", "mov", "mkv", "m4v"), VIDEO),
}

# Kept as live Y.Text documents rather than blobs.
_YTEXT_EXTENSIONS = frozenset({"md", "markdown", "html", "htm"})

# UTF-8 text whatever its storage: assistants may read and grep these.
_TEXT_EXTENSIONS = _YTEXT_EXTENSIONS | frozenset(
    {
        "canvas", "json", "txt", "csv", "tsv", "svg", "css", "js", "ts", "mjs", "yaml", "yml", "toml",
        "xml", "base", "py", "sh", "ini", "tex", "bib", "org", "rst", "log",
    }
)  # fmt: skip

_MIMETYPES = {"md": "text/markdown", "canvas": "application/json", "base": "text/yaml"}


def extension(path: str) -> str:
    """The lower-case extension of the last path segment, without the dot ('' when there is none)."""
    name = posixpath.basename(path)
    stem, dot, ext = name.rpartition(".")
    return ext.lower() if dot and stem else ""


def file_kind(path: str) -> str:
    """The `filemeta_v0` type of a file at this path."""
    return _TYPES.get(extension(path), FILE)


def is_text_file(path: str) -> bool:
    """Whether the file is UTF-8 text by its name (markdown, HTML, JSON, canvas, plain text, ...)."""
    return extension(path) in _TEXT_EXTENSIONS


def stored_as_text(path: str) -> bool:
    """Whether the file's content is a collaborative Y.Text document (markdown, HTML) rather than a blob."""
    return extension(path) in _YTEXT_EXTENSIONS


def mimetype(path: str) -> str:
    """The content type Relay clients record in the entry's `mimetype`."""
    ext = extension(path)
    if ext in _MIMETYPES:
        return _MIMETYPES[ext]
    guessed, _ = mimetypes.guess_type("x." + ext) if ext else (None, None)
    return guessed or "application/octet-stream"


def blob_entry_meta(*, uuid: str, path: str, digest: str, kind: str | None = None) -> dict[str, Any]:
    """A blob file's `filemeta_v0` value as Relay clients write it (their `BaseFileMeta`)."""
    return {
        "id": uuid,
        "type": kind or file_kind(path),
        "version": 0,
        "hash": digest,
        "mimetype": mimetype(path),
        "synctime": int(time.time() * 1000),
    }
