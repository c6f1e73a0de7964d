"""Backups, taken while a note is being written, restored on the other engine and back (SQLite →
PostgreSQL → SQLite): every note's text at the backup's point of the update log, every suggestion,
version, token, person and file blob comes back; a damaged, altered or foreign archive, or a database that
is not empty, is refused with a clear message and nothing is changed."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection, connections
from pycrdt import Doc, Text

from lensrelay.access.tokens import token_create
from lensrelay.files.blobs import blob_list, blob_put, blob_read
from lensrelay.history.models import DocVersion
from lensrelay.models import ApiToken, Document, YDoc, YSnapshot, YUpdate, new_doc_id
from lensrelay.vault.documents import document_create
from suggestions.models import Suggestion
from tests.suggestions.test_admin import propose

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[3]
POSTGRES = os.environ.get("LENSRELAY_TEST_POSTGRES_ADMIN", "postgres://postgres@127.0.0.1:5432/test")
MARKER = "BACKUP-STATE "


def state(*, upto: int | None = None) -> dict[str, Any]:
    """What a restore must bring back, read from this database (texts at update ``upto`` when given)."""
    texts = {}
    for doc_id in YDoc.objects.filter(kind="content").values_list("doc_id", flat=True):
        rows = YUpdate.objects.filter(doc_id=doc_id).order_by("id")
        if upto is not None:
            rows = rows.filter(id__lte=upto)
        doc: Doc[Any] = Doc()
        snapshot = YSnapshot.objects.filter(doc_id=doc_id).first()
        if snapshot is not None:
            assert upto is None or snapshot.upto_update_id <= upto
            doc.apply_update(bytes(snapshot.data))
        for data in rows.values_list("data", flat=True):
            doc.apply_update(bytes(data))
        texts[doc_id] = str(doc.get("contents", type=Text))
    files = {
        doc_id: sorted(
            hashlib.sha256(blob_read(doc_id=doc_id, hash=b.hash)).hexdigest()
            for b in blob_list(doc_id=doc_id)
        )
        for doc_id in Document.objects.exclude(hash="").values_list("doc_id", flat=True)
    }
    return {
        "texts": texts,
        "suggestions": sorted(Suggestion.objects.values_list("uid", "status", "new_text", "person_id")),
        "versions": sorted(DocVersion.objects.values_list("doc_id", "upto_update_id", "text_hash")),
        "users": sorted(User.objects.values_list("pk", "username", "password", "is_staff")),
        "groups": sorted((u.username, g.name) for u in User.objects.all() for g in u.groups.all()),
        "tokens": sorted(ApiToken.objects.values_list("name", "token_hash", "role")),
        "files": files,
    }


def _as_json(value: dict[str, Any]) -> Any:
    return json.loads(json.dumps(value, default=str))


def manage(*args: str, database: str, data: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "LENSRELAY_DATA_DIR": str(data),
        "LENSRELAY_FILES_DIR": str(data / "files-root"),
        "DJANGO_SETTINGS_MODULE": "lensrelay.settings",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def state_there(*, database: str, data: Path) -> Any:
    script = (
        "import json; from tests.lensrelay.backups.test_backup import state, _as_json; "
        f"print({MARKER!r} + json.dumps(_as_json(state())))"
    )
    run = manage("shell", "-c", script, database=database, data=data)
    assert run.returncode == 0, run.stderr
    [line] = [x for x in run.stdout.splitlines() if x.startswith(MARKER)]
    return json.loads(line[len(MARKER) :])


@pytest.fixture
def fresh_postgres() -> Any:
    """Makes new, empty PostgreSQL databases (the service must be there: a missing one fails, never
    skips), dropped afterwards."""
    made: list[str] = []

    def make() -> str:
        name = f"restore_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(POSTGRES, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        return POSTGRES.rsplit("/", 1)[0] + f"/{name}"

    yield make
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        for name in made:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@sync_to_async
def backup_here(path: Path) -> str:
    """`manage.py backup` in this process, from a thread whose connection is closed after (PostgreSQL
    will not drop the test database while a session holds it)."""
    out = io.StringIO()
    try:
        call_command("backup", str(path), stdout=out)
    finally:
        connections.close_all()
    return out.getvalue()


async def fill(store: Any, make_folder: Any) -> tuple[Any, Any]:
    folder = await sync_to_async(make_folder)("Team")
    sam = await sync_to_async(User.objects.create_user)("sam", password="pw", is_staff=True)
    await sync_to_async(call_command)("invite", "ada@example.org", "--group", "Editors", stdout=io.StringIO())
    await sync_to_async(token_create)(name="claude", role="suggest", folders=(folder,))
    note = await document_create(
        store=store, folder=folder, path="/Plan.md", text="# Plan\n\nThe quick fox.\n"
    )
    other = await document_create(store=store, folder=folder, path="/Über.md", text="Grüße 😀\n")
    await propose(store, note, ("quick", "swift"))
    pic = await sync_to_async(Document.objects.create)(
        folder=folder, doc_id=new_doc_id(), path="/pic.png", type="image", hash=""
    )
    digest = await sync_to_async(blob_put)(doc_id=pic.doc_id, data=b"\x89PNG not really" * 100)
    pic.hash = digest
    await sync_to_async(pic.save)()
    assert sam.pk and other.doc_id
    return note, folder


async def test_a_backup_taken_while_writing_restores_on_the_other_engine_and_back(
    store: Any, make_folder: Any, tmp_path: Path, fresh_postgres: Any
) -> None:
    """On the SQLite pass: SQLite -> PostgreSQL -> SQLite; on the PostgreSQL pass the other way round."""

    def fresh(engine: str, name: str) -> str:
        if engine == "postgresql":
            return str(fresh_postgres())
        (tmp_path / name).mkdir(exist_ok=True)
        return f"sqlite:///{tmp_path / name / 'restored.sqlite3'}"

    source = connection.vendor
    other = "postgresql" if source == "sqlite" else "sqlite"
    note, _ = await fill(store, make_folder)
    room = await store.get(note.doc_id)
    ytext = room.doc.get("contents", type=Text)
    writing = True

    async def keep_writing() -> int:
        typed = 0
        while writing:
            with room.transact():
                ytext.insert(len(str(ytext).encode()), "w")
            typed += 1
            await asyncio.sleep(0.005)
        return typed

    writer = asyncio.create_task(keep_writing())
    await asyncio.sleep(0.1)
    archive = tmp_path / "team.tar.gz"
    said = await backup_here(archive)
    await asyncio.sleep(0.1)
    writing = False
    assert await writer > 10
    await room.flushed()
    assert "Backed up" in said and archive.stat().st_size > 0
    with tarfile.open(archive) as tar:
        point = json.load(tar.extractfile("manifest.json"))["log_point"]  # type: ignore[arg-type]
    expected = _as_json(await sync_to_async(state)(upto=point))
    now = _as_json(await sync_to_async(state)())
    assert now["texts"][note.doc_id] != expected["texts"][note.doc_id]  # writes went on after the point
    assert expected["texts"][note.doc_id].startswith("# Plan\n\nThe {--")
    assert expected["files"] and expected["suggestions"] and expected["versions"] is not None

    # onto the other engine
    there, there_data = fresh(other, "there"), tmp_path / "there-data"
    restored = manage("restore", str(archive), database=there, data=there_data)
    assert restored.returncode == 0, restored.stderr
    assert "Restored" in restored.stdout
    assert state_there(database=there, data=there_data) == expected

    # ... and back: a backup of that copy, restored into a new database of the source's engine
    again = tmp_path / "again.tar.gz"
    taken = manage("backup", str(again), database=there, data=there_data)
    assert taken.returncode == 0, taken.stderr
    back, back_data = fresh(source, "back"), tmp_path / "back-data"
    restored = manage("restore", str(again), database=back, data=back_data)
    assert restored.returncode == 0, restored.stderr
    assert state_there(database=back, data=back_data) == expected

    # A database that is not empty is refused, and keeps what it had.
    refused = manage("restore", str(archive), database=back, data=back_data)
    assert refused.returncode != 0 and "not empty" in refused.stderr
    assert state_there(database=back, data=back_data) == expected


def _rewritten(archive: Path, target: Path, change: Any) -> None:
    """Copy the archive member by member, letting ``change(name, data)`` alter each."""
    with tarfile.open(archive) as source, tarfile.open(target, "w:gz") as out:
        for member in source:
            data = source.extractfile(member).read()  # type: ignore[union-attr]
            data = change(member.name, data)
            if data is None:
                continue
            info = tarfile.TarInfo(member.name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))


async def test_damaged_altered_and_foreign_archives_are_refused_and_change_nothing(
    store: Any, make_folder: Any, tmp_path: Path
) -> None:
    await fill(store, make_folder)
    archive = tmp_path / "good.tar.gz"
    await backup_here(archive)
    raw = archive.read_bytes()
    cases: dict[str, tuple[Path, str]] = {}

    def case(name: str, data: bytes, words: str) -> None:
        path = tmp_path / f"{name}.tar.gz"
        path.write_bytes(data)
        cases[name] = (path, words)

    flipped = bytearray(raw)
    flipped[len(raw) // 2] ^= 0xFF
    case("flipped-byte", bytes(flipped), "")
    case("truncated", raw[: len(raw) // 2], "not a readable backup archive")
    case("not-gzip", b"hello", "not a readable backup archive")
    case("plain-gzip", gzip.compress(b"hello"), "not a readable backup archive")
    altered = tmp_path / "altered.tar.gz"
    _rewritten(
        archive,
        altered,
        lambda name, data: (
            data.replace(b'"Team"', b'"Tean"') if name == "rows/lensrelay.folder.jsonl" else data
        ),
    )
    cases["altered-rows"] = (altered, "")
    dropped = tmp_path / "dropped.tar.gz"
    _rewritten(archive, dropped, lambda name, data: None if name.startswith("blobs/") else data)
    cases["dropped-blob"] = (dropped, "incomplete or altered")
    escape = tmp_path / "escape.tar.gz"
    with tarfile.open(archive) as source, tarfile.open(escape, "w:gz") as out:
        for member in source:
            out.addfile(member, source.extractfile(member))
        evil = tarfile.TarInfo("../outside-the-scratch-directory.txt")
        evil.size = 4
        out.addfile(evil, io.BytesIO(b"evil"))
    cases["path-traversal"] = (escape, "unexpected member")
    foreign = tmp_path / "foreign.tar.gz"
    _rewritten(
        archive, foreign, lambda name, data: b'{"format": "other"}' if name == "manifest.json" else data
    )
    cases["foreign"] = (foreign, "not a Lens Relay backup")
    for name, (path, words) in cases.items():
        data_dir = tmp_path / f"target-{name}"
        data_dir.mkdir()
        url = f"sqlite:///{data_dir / 'db.sqlite3'}"
        run = manage("restore", str(path), database=url, data=data_dir)
        assert run.returncode != 0, name
        message = run.stderr.strip().splitlines()[-1]
        assert message.startswith("CommandError:") and words in message, (name, message)
        assert "Traceback" not in run.stderr, name
        assert not (Path(tempfile.gettempdir()) / "outside-the-scratch-directory.txt").exists()
        # Refused before the database was touched: not even its tables were made.
        database = data_dir / "db.sqlite3"
        assert not database.exists() or database.stat().st_size == 0, name


async def test_a_backup_that_fails_leaves_nothing_behind(
    store: Any, make_folder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await fill(store, make_folder)

    def unreadable(**kwargs: Any) -> bytes:
        raise OSError("the storage went away")

    monkeypatch.setattr("lensrelay.backups.service.blob_read", unreadable)
    archive = tmp_path / "broken.tar.gz"
    with pytest.raises(OSError, match="the storage went away"):
        await backup_here(archive)
    assert list(tmp_path.iterdir()) == []
