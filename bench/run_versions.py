"""The versions a team's edit bursts leave when it stops typing in many notes at once (issue 36).

For each run, a store of its own (`manage.py shell`, the derive process's code) creates ``--notes`` fresh
notes, keeps the text each was created with as its first version, types a burst into each as several
authors, and then keeps every burst's quiet version as the derive process's follower does when they all go
quiet in one pass. Timed: that last step alone, wall and CPU time of the process, and its database queries.

The peer is the same step of another revision (``--before``, exported with ``git archive``), run in the
same invocation, alternating: before `3f337d6` the follower kept the quiet versions one note at a time.

    .venv/bin/python -m bench.run_versions [--notes 300] [--runs 3] [--before bdb5d89] [--database-url URL]

``--database-url`` runs both on that (empty) PostgreSQL database, migrated first; by default each side
has a fresh SQLite database in the work directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import harness

MARKER = "VERSIONS-BENCH "

SCRIPT = """
import json, resource, time
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pycrdt import Text
from lensrelay.docstore.room import Origin
from lensrelay.docstore.store import store_session
from lensrelay.history import recording
from lensrelay.models import YUpdate
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create

NOTES, RUN = {notes}, {run}

async def typed():
    async with store_session() as store:
        folder = await sync_to_async(folder_create)(name=f"Bench{{RUN}}")
        doc_ids = []
        for n in range(NOTES):
            made = await document_create(store=store, folder=folder, path=f"/N{{n}}.md", text=f"{{n}}\\n")
            doc_ids.append(made.doc_id)
        for author in ("alice", "bob", "carol"):
            for doc_id in doc_ids:
                room = await store.get(doc_id)
                ytext = room.doc.get("contents", type=Text)
                with room.transact(Origin("bench", author=author)):
                    ytext.insert(len(str(ytext).encode()), f"{{author}} typed here.\\n")
        for doc_id in doc_ids:
            await (await store.get(doc_id)).flushed()
        return doc_ids

doc_ids = async_to_sync(typed)()
firsts = {{
    doc_id: YUpdate.objects.filter(doc_id=doc_id).order_by("id").values_list("id", flat=True)[0]
    for doc_id in doc_ids
}}
recording.version_record_burst_baselines(first_ids=firsts)
batch = getattr(recording, "versions_record_stored", None)
cpu, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
with CaptureQueriesContext(connection) as queries:
    if batch is not None:
        kept = sum(1 for v in batch(doc_ids=doc_ids).values() if v is not None)
    else:  # the follower before: one note at a time
        kept = sum(1 for d in doc_ids if recording.version_record_stored(doc_id=d) is not None)
wall = time.perf_counter() - wall
after = resource.getrusage(resource.RUSAGE_SELF)
print({marker!r} + json.dumps({{
    "wall_s": wall, "cpu_s": after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime,
    "queries": len(queries), "kept": kept,
}}))
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", default="bdb5d89", help="the revision to compare with")
    parser.add_argument("--database-url", help="an empty PostgreSQL database for both sides")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    return parser.parse_args(argv)


def export(commit: str, target: Path) -> Path:
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(harness.REPO_ROOT), "archive", commit], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def manage(source: Path, env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=source,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode != 0:
        raise harness.BenchError(
            f"manage.py {args[0]} failed:\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
        )
    return result.stdout


def one_run(source: Path, env: dict[str, str], *, notes: int, run: int) -> dict[str, Any]:
    script = SCRIPT.format(notes=notes, run=run, marker=MARKER)
    printed = manage(source, env, "shell", "-c", script)
    line = next(line for line in printed.splitlines() if line.startswith(MARKER))
    result: dict[str, Any] = json.loads(line[len(MARKER) :])
    if result["kept"] != notes:
        raise harness.BenchError(f"{result['kept']} of {notes} quiet versions kept")
    return result


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-versions-"))
    try:
        sides = {"after": harness.REPO_ROOT, "before": export(args.before, work / "before")}
        envs: dict[str, dict[str, str]] = {}
        for name, source in sides.items():
            data = work / name
            data.mkdir(exist_ok=True)
            database = args.database_url or f"sqlite:///{data}/db.sqlite3"
            envs[name] = {
                "DATABASE_URL": database,
                "LENSRELAY_DATA_DIR": str(data),
                "LENSRELAY_DEMO": "0",
                "LENSRELAY_DERIVED_WORK": "process",
                "DJANGO_SETTINGS_MODULE": "lensrelay.settings",
            }
            manage(source, envs[name], "migrate", "--noinput")
        harness.print_header(
            f"quiet versions of {args.notes} notes at once", source=f"working tree vs {args.before}"
        )
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
        for run in range(args.runs):
            for name, source in sides.items():
                # Both sides share a PostgreSQL database: each run's folder has a name of its own.
                results[name].append(
                    one_run(source, envs[name], notes=args.notes, run=2 * run + (name == "before"))
                )
                print(name, run, results[name][-1], flush=True)
        rows = []
        for name in sides:
            cpu = [r["cpu_s"] * 1000 for r in results[name]]
            wall = [r["wall_s"] * 1000 for r in results[name]]
            rows.append(
                (
                    name,
                    ", ".join(f"{v:.0f}" for v in wall),
                    ", ".join(f"{v:.0f}" for v in cpu),
                    f"{harness.median(cpu) / args.notes * 1000:.0f}",
                    results[name][0]["queries"],
                )
            )
        print(
            harness.table(
                ["side", "wall (ms), each run", "CPU (ms), each run", "CPU per note (µs)", "queries"], rows
            )
        )
        after = harness.median(r["cpu_s"] for r in results["after"])
        before = harness.median(r["cpu_s"] for r in results["before"])
        print(f"CPU after ÷ before: {harness.ratio(after, before)}")
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
