"""Backup and restore of a 10,000-note vault with 100 MB of file blobs (issue 34): the time of
`manage.py backup` and of `manage.py restore` into a new SQLite and a new PostgreSQL database, and the
archive's size; beside the naive peer on the same data, a copy of the SQLite database (sqlite3's online
backup API) plus a gzipped tar of the blob directory, which is neither checked nor portable.

    .venv/bin/python -m bench.run_backup --notes 10000 --blob-mb 100 --runs 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

from bench.vaultgen import generate

ROOT = Path(__file__).resolve().parent.parent
POSTGRES = os.environ.get("LENSRELAY_TEST_POSTGRES_ADMIN", "postgres://postgres@127.0.0.1:5432/test")


def manage(*args: str, database: str, data: Path) -> float:
    env = {**os.environ, "DATABASE_URL": database, "LENSRELAY_DATA_DIR": str(data), "LENSRELAY_DEMO": "false"}
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if run.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{run.stderr[-3000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--blob-mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-backup-"))
    vault = work / "vault"
    generate(vault, notes=args.notes)
    rng = random.Random(5)
    (vault / "files").mkdir()
    for index in range(args.blob_mb):
        (vault / "files" / f"scan-{index:03d}.png").write_bytes(rng.randbytes(1024 * 1024))
    source = work / "source"
    source.mkdir()
    source_db = f"sqlite:///{source / 'lensrelay.sqlite3'}"
    manage("migrate", database=source_db, data=source)
    imported = manage("import_vault", str(vault), "--folder", "Bench", database=source_db, data=source)
    results: dict[str, object] = {
        "notes": args.notes,
        "blob_mb": args.blob_mb,
        "import_s": round(imported, 1),
    }
    for run in range(args.runs):
        archive = work / f"backup-{run}.tar.gz"
        backup_s = manage("backup", str(archive), database=source_db, data=source)
        lite = work / f"lite-{run}"
        lite.mkdir()
        lite_s = manage("restore", str(archive), database=f"sqlite:///{lite / 'db.sqlite3'}", data=lite)
        name = f"bench_restore_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(POSTGRES, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            pg_s = manage(
                "restore",
                str(archive),
                database=POSTGRES.rsplit("/", 1)[0] + f"/{name}",
                data=work / f"pg-{run}",
            )
        finally:
            with psycopg.connect(POSTGRES, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        # The peer: the database file copied online, and the blob directory tarred.
        started = time.perf_counter()
        peer = work / f"peer-{run}"
        peer.mkdir()
        with (
            sqlite3.connect(source / "lensrelay.sqlite3") as live,
            sqlite3.connect(peer / "copy.sqlite3") as copy,
        ):
            live.backup(copy)
        with tarfile.open(peer / "peer.tar.gz", "w:gz") as tar:
            tar.add(peer / "copy.sqlite3", arcname="copy.sqlite3")
            tar.add(source / "files", arcname="files")
        peer_s = time.perf_counter() - started
        figures = {
            "backup_s": round(backup_s, 1),
            "archive_mb": round(archive.stat().st_size / 2**20, 1),
            "restore_sqlite_s": round(lite_s, 1),
            "restore_postgresql_s": round(pg_s, 1),
            "peer_copy_s": round(peer_s, 1),
            "peer_mb": round((peer / "peer.tar.gz").stat().st_size / 2**20, 1),
        }
        results[f"run {run + 1}"] = figures
        print(json.dumps({"run": run + 1, **figures}), flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
