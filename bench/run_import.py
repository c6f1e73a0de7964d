"""Import a generated 10,000-note vault, then time the first sync of one of its documents.

- ``manage.py import_vault`` into a fresh, migrated SQLite database, against two floors run on the same
  files: ``cp -r`` of the vault (the bytes alone) and ``manage.py check`` (the cost of starting Django);
  with ``--reimport``, a re-import of the unchanged vault (what an operator's periodic re-import costs).
- Time to first sync on a freshly started server: ``bench/node/firstsync.mjs`` creates a y-websocket
  provider and waits until it has synced and holds the whole text. Cold (first connection after start),
  warm room (a second client on that document), cold room on a warm server (another document). Against
  ``@y/websocket-server``: a fresh client joining a room that holds the same text. Every timed client is
  the second of its Node process (the first warms Node up on a room of the reference server).

    .venv/bin/python -m bench.run_import [--notes 10000] [--restarts 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import harness, vaultgen
from tests.e2e.liveserver import LiveServer

FOLDER = "Vault"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--bytes", type=int, default=2000, help="approximate size of each note")
    parser.add_argument("--restarts", type=int, default=3, help="server starts for the first-sync timings")
    parser.add_argument(
        "--reimport",
        action="store_true",
        help="also re-import the unchanged vault (slow: minutes for 10,000 notes at commit 6bae8bd)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def timed_cpu(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of the child processes it ran, result): on a shared machine the CPU
    time moves far less with the load than the wall time does."""
    before = os.times()
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, result


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def database_bytes(server: LiveServer) -> int:
    return sum(p.stat().st_size for p in server.data_dir.glob("db.sqlite3*"))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    harness.require_node_packages()
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-import-"))
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("Import and first sync", source=source_text)
    started = time.monotonic()

    vault = workdir / "vault"
    stats = vaultgen.generate(vault, notes=args.notes, size=args.bytes)
    files = sorted(vault.rglob("*.md"))
    print(
        f"Vault: {stats.notes:,} notes in {stats.folders} folders, {stats.bytes / 1e6:.1f} MB "
        f"(`python -m bench.vaultgen`, seed 1).\n"
    )

    relay = harness.relay_server(workdir, source=source)
    reference: LiveServer | None = None
    try:
        cp_seconds, cp_cpu, _ = min(
            timed_cpu(subprocess.run, ["cp", "-r", str(vault), str(workdir / f"copy{i}")], check=True)
            for i in range(3)
        )
        harness.manage(relay, "migrate", "--noinput")
        relay.setup = []
        check_seconds, check_cpu, _ = min(timed_cpu(harness.manage, relay, "check") for _ in range(3))
        import_seconds, import_cpu, import_output = timed_cpu(
            harness.import_vault, relay, vault, folder=FOLDER
        )
        db_bytes = database_bytes(relay)
        reimport_seconds: float | None = None
        reimport_cpu = 0.0
        reimport_output = ""
        if args.reimport:
            reimport_seconds, reimport_cpu, reimport_output = timed_cpu(
                harness.import_vault, relay, vault, folder=FOLDER
            )

        ready_seconds, _ = timed(relay.start)
        token = harness.create_token(relay)
        doc_ids = harness.document_ids(relay, token=token, folder=FOLDER)
        if len(doc_ids) != stats.notes:
            raise harness.BenchError(f"{len(doc_ids)} documents listed, {stats.notes} imported")

        def doc_step(label: str, path: Path) -> dict[str, Any]:
            user_path = f"{FOLDER}/{path.relative_to(vault).as_posix()}"
            target = harness.relay_target(relay, doc_ids[user_path], token)
            return {"label": label, **target, "expectLength": utf16_length(path.read_text())}

        # Both timed runs are the second client of their Node process: a process's first WebSocket client
        # pays for Node warming up its own code (15-24 ms against 5-9 ms for the next one, measured against
        # the reference alone). The reference's first client fills its room; ours warms up on a room of the
        # reference server, which leaves our server as cold as before.
        reference = harness.start_reference(workdir)
        ours: dict[str, list[float]] = {}
        ready_times = [ready_seconds]
        stride = len(files) // (2 * args.restarts + 1)
        for restart in range(args.restarts):
            if restart:
                relay.stop()
                ready_times.append(timed(relay.start)[0])
            first, other = files[(2 * restart + 1) * stride], files[(2 * restart + 2) * stride]
            steps = [
                {
                    "label": "Node warm-up",
                    **harness.reference_target(reference, f"node-warm-up-{restart}"),
                    "fill": "warm-up",
                    "expectLength": 7,
                    "time": False,
                },
                doc_step("cold server, cold room", first),
                doc_step("warm room (second client)", first),
                doc_step("warm server, cold room", other),
            ]
            for timing in harness.run_driver("firstsync.mjs", {"steps": steps})["timings"]:
                ours.setdefault(timing["label"], []).append(timing["ms"])

        reference_times: list[float] = []
        for restart in range(args.restarts):
            text = files[(2 * restart + 1) * stride].read_text()
            room = f"first-sync-{restart}"
            target = harness.reference_target(reference, room)
            steps = [
                {
                    "label": "filler",
                    **target,
                    "fill": text,
                    "expectLength": utf16_length(text),
                    "time": False,
                },
                {"label": "reference", **target, "expectLength": utf16_length(text)},
            ]
            reference_times += [
                t["ms"] for t in harness.run_driver("firstsync.mjs", {"steps": steps})["timings"]
            ]
    finally:
        relay.kill()
        if reference is not None:
            reference.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print(f"`import_vault` said: {import_output.splitlines()[-1] if import_output else '?'}")
    if reimport_output:
        print(f"Re-import said: {reimport_output.splitlines()[-1]}")
    print()
    rows: list[list[object]] = [
        [
            "`cp -r` of the vault (floor: the bytes)",
            f"{cp_seconds:.2f}",
            "1.00x",
            f"{stats.notes / cp_seconds:,.0f}",
            f"{cp_cpu:.2f}",
        ],
        [
            "`manage.py check` (floor: Django start-up)",
            f"{check_seconds:.2f}",
            harness.ratio(check_seconds, cp_seconds),
            "-",
            f"{check_cpu:.2f}",
        ],
        [
            "`manage.py import_vault`, fresh database",
            f"{import_seconds:.2f}",
            harness.ratio(import_seconds, cp_seconds),
            f"{stats.notes / import_seconds:,.0f}",
            f"{import_cpu:.2f}",
        ],
    ]
    if reimport_seconds is not None:
        rows.append(
            [
                "`manage.py import_vault` again, nothing changed",
                f"{reimport_seconds:.2f}",
                harness.ratio(reimport_seconds, cp_seconds),
                f"{stats.notes / reimport_seconds:,.0f}",
                f"{reimport_cpu:.2f}",
            ]
        )
    print(harness.table(["step", "seconds", "vs cp -r", "notes/s", "CPU s (user+sys)"], rows))
    print(f"\nDatabase after import: {db_bytes / 1e6:.1f} MB (SQLite file and WAL).\n")

    ref_ms = harness.median(reference_times)
    sync_rows: list[list[object]] = [
        ["reference: fresh client, room holding the same text", f"{ref_ms:.1f}", "1.00x"]
    ]
    for label, values in ours.items():
        sync_rows.append(
            [f"ours: {label}", f"{harness.median(values):.1f}", harness.ratio(harness.median(values), ref_ms)]
        )
    print(
        f"First sync of one ~{args.bytes} B note, median of {args.restarts} server starts "
        f"(ours: process start to `/ready` {harness.median(ready_times):.2f} s, median):\n"
    )
    print(harness.table(["client", "ms to synced with full text", "ours/ref"], sync_rows))
    print(f"\nWall time {time.monotonic() - started:.0f} s; load average at end {harness.load_average()}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
