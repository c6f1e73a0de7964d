"""The backup archive: a gzipped tar of the database's rows (one JSON Lines file per model, as Django's
serializers write them), the file blobs, and a manifest that names every member with its size and
sha256, the row counts, the update log's point and the schema the rows fit.

Reading an archive checks everything before anything is restored: the manifest must be there and
readable, every member it names must be there with its size and hash, and nothing else may be.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

FORMAT = "lensrelay-backup"
VERSION = 1
MANIFEST = "manifest.json"
CHUNK = 1024 * 1024


class ArchiveRefused(ValueError):
    """The archive cannot be restored; the message says why, in words for the person restoring."""


@dataclass
class Manifest:
    created: str
    engine: str
    log_point: int
    schema: dict[str, str]
    rows: dict[str, int] = field(default_factory=dict)
    # member name -> [size, sha256]
    members: dict[str, list[Any]] = field(default_factory=dict)
    blobs: list[list[str]] = field(default_factory=list)  # [doc_id, hash] of each blob member

    def as_json(self) -> bytes:
        body = {"format": FORMAT, "version": VERSION, **self.__dict__}
        return json.dumps(body, indent=1, sort_keys=True).encode()


def blob_member(doc_id: str, hash: str) -> str:
    return f"blobs/{doc_id}/{hash}"


def file_digest(handle: BinaryIO) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    while chunk := handle.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


class ArchiveWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._tar = tarfile.open(path, "w:gz")  # noqa: SIM115 (closed by finish)
        self.members: dict[str, list[Any]] = {}

    def add_file(self, name: str, source: Path) -> None:
        with source.open("rb") as handle:
            self.members[name] = list(file_digest(handle))
        self._tar.add(source, arcname=name, recursive=False)

    def add_bytes(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        self.members[name] = [len(data), hashlib.sha256(data).hexdigest()]
        self._tar.addfile(info, io.BytesIO(data))

    def abandon(self) -> None:
        """Close and delete what was written (a backup that failed)."""
        try:
            self._tar.close()
        finally:
            self.path.unlink(missing_ok=True)

    def finish(self, manifest: Manifest) -> None:
        manifest.members = dict(self.members)
        body = manifest.as_json()
        info = tarfile.TarInfo(MANIFEST)
        info.size = len(body)
        self._tar.addfile(info, io.BytesIO(body))
        self._tar.close()


def read_archive(path: Path, into: Path) -> Manifest:
    """Unpack ``path`` into the directory ``into`` and check it whole; raises ArchiveRefused."""
    if not path.is_file():
        raise ArchiveRefused(f"{path} is not a file")
    try:
        with tarfile.open(path, "r:gz") as tar:
            names = []
            for member in tar:
                if (
                    not member.isfile()
                    or member.name.startswith(("/", ".."))
                    or ".." in member.name.split("/")
                ):
                    raise ArchiveRefused(f"{path}: unexpected member {member.name!r}")
                names.append(member.name)
                target = into / member.name
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                with target.open("wb") as out:
                    while chunk := source.read(CHUNK):
                        out.write(chunk)
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise ArchiveRefused(
            f"{path} is not a readable backup archive ({type(exc).__name__}: {exc})"
        ) from exc
    if MANIFEST not in names:
        raise ArchiveRefused(f"{path} has no {MANIFEST}: not a Lens Relay backup")
    try:
        body = json.loads((into / MANIFEST).read_bytes())
        if body.pop("format", None) != FORMAT:
            raise ArchiveRefused(f"{path} is not a Lens Relay backup")
        if body.pop("version", None) != VERSION:
            raise ArchiveRefused(f"{path} is a backup of another format version than {VERSION}")
        manifest = Manifest(**body)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, ArchiveRefused):
            raise
        raise ArchiveRefused(f"{path}: its manifest is damaged ({exc})") from exc
    listed = set(manifest.members)
    found = set(names) - {MANIFEST}
    if listed != found:
        missing, extra = sorted(listed - found), sorted(found - listed)
        raise ArchiveRefused(
            f"{path} is incomplete or altered: missing {missing[:5]}, unexpected {extra[:5]}"
        )
    for name, (size, digest) in sorted(manifest.members.items()):
        with (into / name).open("rb") as handle:
            if file_digest(handle) != (size, digest):
                raise ArchiveRefused(f"{path} is damaged: {name} does not hold what the manifest says")
    return manifest
