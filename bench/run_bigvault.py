"""A big vault end to end: import, unchanged re-import, server start to the first MCP answer, peak memory.

1. ``bench.vaultgen`` writes N notes (default 100,000 of ~2 KB); ``cp -r`` of it is the floor.
2. ``manage.py import_vault`` into a fresh database, then again with nothing changed.
3. The server starts (process start to ``/ready``); one MCP session (handshake era) sends its first
   ``read``: the time from process start to that answer is what an assistant waits for after a restart.
   Then a first ``search`` and a first ``grep`` (which loads every text), each timed.
4. Memory: the server's VmRSS after the first answer, after ``--reads`` MCP ``read`` calls on distinct
   notes, and its peak (VmHWM) over the whole run.

    .venv/bin/python -m bench.run_bigvault [--notes 100000] [--reads 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import harness, vaultgen
from bench.run_grep import McpSession
from bench.run_import import timed

FOLDER = "Vault"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--bytes", type=int, default=2000, help="approximate size of each note")
    parser.add_argument("--reads", type=int, default=1000, help="distinct notes read over MCP")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


def vm_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise harness.BenchError(f"no {field} for pid {pid}")


async def first_answers(url: str, token: str, paths: list[str], reads: int) -> dict[str, float]:
    timings: dict[str, float] = {}
    session = McpSession(url, token, name="bench-bigvault")
    start = time.perf_counter()
    await session.open()
    reply = await session.call("read", {"file_path": paths[0]})
    timings["first read"] = time.perf_counter() - start
    if reply.is_error:
        raise harness.BenchError(f"read failed: {reply.text[:300]}")
    for tool, arguments in (("search", {"query": "garden", "limit": 5}), ("grep", {"pattern": "04242"})):
        start = time.perf_counter()
        reply = await session.call(tool, arguments)
        timings[f"first {tool}"] = time.perf_counter() - start
        if reply.is_error:
            raise harness.BenchError(f"{tool} failed: {reply.text[:300]}")
    stride = max(1, len(paths) // reads)
    start = time.perf_counter()
    for path in paths[::stride][:reads]:
        await session.call("read", {"file_path": path})
    timings["reads"] = time.perf_counter() - start
    await session.close()
    return timings


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-bigvault-"))
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("A big vault: import, re-import, first MCP answer, memory", source=source_text)
    started = time.monotonic()
    vault = workdir / "vault"
    stats = vaultgen.generate(vault, notes=args.notes, size=args.bytes)
    paths = sorted(f"{FOLDER}/{p.relative_to(vault).as_posix()}" for p in vault.rglob("*.md"))
    print(f"Vault: {stats.notes:,} notes in {stats.folders:,} folders, {stats.bytes / 1e6:.1f} MB.\n")

    relay = harness.relay_server(workdir, source=source)
    try:
        cp_seconds = timed(subprocess.run, ["cp", "-r", str(vault), str(workdir / "copy")], check=True)[0]
        harness.manage(relay, "migrate", "--noinput")
        relay.setup = []
        import_seconds, imported = timed(harness.import_vault, relay, vault, folder=FOLDER, timeout=3600)
        reimport_seconds, reimported = timed(harness.import_vault, relay, vault, folder=FOLDER, timeout=3600)
        token = harness.create_token(relay, role="view")
        ready_seconds, _ = timed(relay.start)
        assert relay.pid is not None
        ready_rss = vm_kib(relay.pid, "VmRSS")
        timings = asyncio.run(first_answers(f"{relay.http_url}/mcp", token, paths, args.reads))
        read_rss = vm_kib(relay.pid, "VmRSS")
        peak = vm_kib(relay.pid, "VmHWM")
    finally:
        relay.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print(f"Import said: {imported.splitlines()[-1]}")
    print(f"Re-import said: {reimported.splitlines()[-1]}\n")
    print(
        harness.table(
            ["step", "seconds", "vs cp -r"],
            [
                ["`cp -r` of the vault", f"{cp_seconds:.2f}", "1.00x"],
                [
                    "`import_vault`, fresh database",
                    f"{import_seconds:.2f}",
                    harness.ratio(import_seconds, cp_seconds),
                ],
                [
                    "`import_vault` again, nothing changed",
                    f"{reimport_seconds:.2f}",
                    harness.ratio(reimport_seconds, cp_seconds),
                ],
                ["server start to `/ready`", f"{ready_seconds:.2f}", "-"],
                [
                    "server start to first MCP `read` answer (`/ready` + handshake + read)",
                    f"{ready_seconds + timings['first read']:.2f}",
                    "-",
                ],
                ["first `search` after that", f"{timings['first search']:.2f}", "-"],
                ["first `grep` after that (loads every text)", f"{timings['first grep']:.2f}", "-"],
                [f"{args.reads} `read` calls on distinct notes", f"{timings['reads']:.2f}", "-"],
            ],
        )
    )
    print(
        f"\nServer memory: VmRSS {ready_rss / 1024:.0f} MiB after `/ready`, {read_rss / 1024:.0f} MiB after "
        f"the reads; peak (VmHWM) {peak / 1024:.0f} MiB."
    )
    print(f"\nWall time {time.monotonic() - started:.0f} s; load average at end {harness.load_average()}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
