"""A big vault end to end: server start to the first MCP answer, grep vs ripgrep, search, bounded memory.

1. The vault (``bench.vaultgen``, default 100,000 notes of ~2 KB) is generated, imported and exported, or
   reused from ``--cache DIR`` (as ``bench.run_grep`` does: the import alone takes minutes at 100k).
   With ``--reimport`` the import and an unchanged re-import are timed against ``cp -r`` as well.
2. The server starts (process start to ``/ready``); one MCP session (handshake era) sends its first
   ``read``: the time from process start to that answer is what an assistant waits for after a restart.
   An installed server keeps its modules' bytecode, but this machine sets ``PYTHONDONTWRITEBYTECODE``
   and installs with ``--no-compile``, which would make every start compile ~1,300 modules (over half of
   its CPU). So the server keeps its bytecode under the work directory (``bench.harness.relay_server``),
   written by an untimed start before the timed one; ``--no-bytecode`` times a start that compiles
   everything.
3. ``search``: the first one, then the p50 of ``--runs`` rounds over a few queries (answered again from
   the server's kept answers after the first round), and the p50 of new queries: each round asks one,
   two and three words of the vault's vocabulary (each in nearly every note) never asked before.
4. ``grep`` over MCP HTTP: the first one (texts not yet in memory), then the p50 of ``--runs`` against
   ripgrep on the exported files, alternating who goes first, outputs compared.
5. Memory: ``--reads`` MCP ``read`` calls on distinct notes (spread over the vault), VmRSS sampled every
   1,000 reads, and the peak (VmHWM) over the whole run. Set the text cache's budget with
   ``--env LENSRELAY_TEXT_CACHE_BYTES=N``.

    .venv/bin/python -m bench.run_bigvault --commit HEAD --cache /tmp/bigvault-cache [--reads 20000]
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

from bench import harness, run_grep
from bench.run_grep import FOLDER, McpSession, progress, run_ours, run_rg
from bench.run_import import timed

SEARCHES = ("garden", "reading review", "東京", "meeting plan archive")


def new_searches(rounds: int) -> list[str]:
    """Queries not asked before: per round one, two and three common words none of the others used."""
    from bench import vaultgen

    asked = {word for query in SEARCHES for word in query.split()}
    # Over 30 words, each in nearly every note; past a few rounds the words repeat in new combinations.
    words = [word for word in vaultgen._WORDS if word not in asked]
    queries: list[str] = []
    position = 0
    for _ in range(rounds):
        for size in (1, 2, 3):
            query = " ".join(words[(position + i) % len(words)] for i in range(size))
            position += size
            if query not in queries:
                queries.append(query)
    return queries


GREPS: tuple[tuple[str, str], ...] = (
    ("04242", "files_with_matches"),
    ("rocket🚀", "files_with_matches"),
    ("04242", "content"),
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    run_grep.add_vault_arguments(parser)
    parser.set_defaults(notes=100_000)
    parser.add_argument("--reads", type=int, default=20_000, help="distinct notes read over MCP")
    parser.add_argument("--runs", type=int, default=7, help="rounds of search and of grep vs rg")
    parser.add_argument(
        "--reads-first",
        action="store_true",
        help="do the reads right after the first answer, before any search or grep loads every text",
    )
    parser.add_argument(
        "--reimport", action="store_true", help="also time an unchanged re-import against cp -r"
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="time a start that compiles every module (no untimed start to write bytecode first)",
    )
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


def vm_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise harness.BenchError(f"no {field} for pid {pid}")


async def first_answer(url: str, token: str, path: str) -> tuple[McpSession, float]:
    session = McpSession(url, token, name="bench-bigvault")
    start = time.perf_counter()
    await session.open()
    reply = await session.call("read", {"file_path": path})
    seconds = time.perf_counter() - start
    if reply.is_error:
        raise harness.BenchError(f"read failed: {reply.text[:300]}")
    return session, seconds


async def timed_call(session: McpSession, tool: str, arguments: dict[str, object]) -> float:
    start = time.perf_counter()
    reply = await session.call(tool, arguments)
    seconds = time.perf_counter() - start
    if reply.is_error:
        raise harness.BenchError(f"{tool} failed: {reply.text[:300]}")
    return seconds


async def read_many(
    args: argparse.Namespace, session: McpSession, paths: list[str], pid: int, out: dict[str, object]
) -> None:
    progress(f"{args.reads} reads")
    stride = max(1, len(paths) // args.reads)
    chosen = paths[::stride][: args.reads]
    samples: list[tuple[int, int]] = []
    start = time.perf_counter()
    for count, path in enumerate(chosen, 1):
        reply = await session.call("read", {"file_path": path})
        if reply.is_error:
            raise harness.BenchError(f"read {path} failed: {reply.text[:300]}")
        if count % 1000 == 0:
            samples.append((count, vm_kib(pid, "VmRSS")))
    out["reads seconds"] = time.perf_counter() - start
    out["reads"] = len(chosen)
    out["rss samples"] = samples


async def measure(
    args: argparse.Namespace, session: McpSession, export_root: Path, paths: list[str], pid: int
) -> dict[str, object]:
    out: dict[str, object] = {}
    if args.reads_first:
        await read_many(args, session, paths, pid, out)
    progress("first search")
    out["first search"] = await timed_call(session, "search", {"query": SEARCHES[0], "limit": 5})
    search_runs: list[float] = []
    for _ in range(args.runs):
        for query in SEARCHES:
            search_runs.append(await timed_call(session, "search", {"query": query, "limit": 10}))
    out["search"] = search_runs
    new_runs: list[float] = []
    for query in new_searches(args.runs):
        new_runs.append(await timed_call(session, "search", {"query": query, "limit": 10}))
    out["new search"] = new_runs

    progress("first grep")
    out["first grep"], _ = await run_ours(session, GREPS[0][0], GREPS[0][1])
    greps = []
    for pattern, mode in GREPS:
        ours: list[float] = []
        rg: list[float] = []
        lines: dict[str, list[str]] = {"ours": [], "rg": []}
        try:
            for run in range(args.runs):
                # Alternate who goes first, so neither always runs right after the other's burst.
                for who in ("rg", "ours") if run % 2 else ("ours", "rg"):
                    if who == "rg":
                        seconds, lines["rg"] = run_rg(export_root, pattern, mode)
                        rg.append(seconds)
                    else:
                        seconds, lines["ours"] = await run_ours(session, pattern, mode)
                        ours.append(seconds)
        except harness.BenchError as exc:  # e.g. the 2 s grep deadline on a saturated machine
            greps.append((pattern, mode, ours or [float("nan")], rg or [float("nan")], 0, f"failed: {exc}"))
            progress(f"grep {pattern!r} {mode}: {exc}")
            continue
        ours_lines, rg_lines = lines["ours"], lines["rg"]
        agrees = run_grep.compare(ours_lines, rg_lines)
        greps.append((pattern, mode, ours, rg, len(rg_lines), agrees))
        progress(
            f"grep {pattern!r} {mode}: ours {1000 * harness.median(ours):.0f} ms, "
            f"rg {1000 * harness.median(rg):.0f} ms ({agrees})"
        )
    out["greps"] = greps
    out["rss after grep"] = vm_kib(pid, "VmRSS")

    if not args.reads_first:
        await read_many(args, session, paths, pid, out)
    # After the reads evicted what grep had loaded: grep must still answer, and the same.
    out["grep after reads"], after_lines = await run_ours(session, GREPS[0][0], GREPS[0][1])
    _, after_rg = run_rg(export_root, GREPS[0][0], GREPS[0][1])
    out["grep after reads agrees"] = run_grep.compare(after_lines, after_rg)
    out["rss end"] = vm_kib(pid, "VmRSS")
    return out


def write_bytecode(relay: harness.LiveServer, token: str, path: str) -> None:
    """Start ``relay`` once, untimed, up to a first MCP answer, so the timed start imports what an
    installed server would: compiled modules."""
    progress("untimed start (writes the server's bytecode)")

    async def answer_once() -> None:
        session, _ = await first_answer(f"{relay.http_url}/mcp", token, path)
        await session.close()

    relay.start()
    try:
        asyncio.run(answer_once())
    finally:
        relay.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-bigvault-"))
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("A big vault: first MCP answer, grep vs ripgrep, search, memory", source=source_text)
    started = time.monotonic()
    rows: list[list[str]] = []
    try:
        prepared = run_grep.prepare_vault(args, workdir, source)
        relay = prepared.server
        if args.reimport:
            rows += import_rows(args, workdir, relay)
        paths = run_grep.exported_paths(prepared)
        token = harness.create_token(relay, role="view")
        if args.no_bytecode:
            relay.env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            write_bytecode(relay, token, paths[0])
        ready_seconds, _ = timed(relay.start)
        assert relay.pid is not None
        session, first = asyncio.run(first_answer(f"{relay.http_url}/mcp", token, paths[0]))
        ready_rss = vm_kib(relay.pid, "VmRSS")

        async def rest() -> dict[str, object]:
            # A fresh client for the rest: the first one's connection belongs to the first loop.
            session = McpSession(f"{relay.http_url}/mcp", token, name="bench-bigvault")
            await session.open()
            try:
                return await measure(args, session, prepared.export_root, paths, relay.pid or 0)
            finally:
                await session.close()

        out = asyncio.run(rest())
        peak = vm_kib(relay.pid, "VmHWM")
    finally:
        if "prepared" in locals():
            prepared.server.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    stats = prepared.stats
    print(
        f"Vault: {stats.notes:,} notes in {stats.folders:,} folders, {stats.bytes / 1e6:.1f} MB; "
        f"{prepared.built}.\n"
    )
    search_runs, new_runs = out["search"], out["new search"]
    assert isinstance(search_runs, list) and isinstance(new_runs, list)
    rows += [
        ["server start to `/ready`", f"{ready_seconds:.2f} s"],
        [
            "**server start to the first MCP `read` answer** (`/ready` + handshake + read)",
            f"**{ready_seconds + first:.2f} s**",
        ],
        ["first `search` after that", f"{out['first search']:.2f} s"],
        [
            f"`search` p50 ({len(search_runs)} calls: {', '.join(repr(q) for q in SEARCHES)})",
            f"{1000 * harness.median(search_runs):.1f} ms",
        ],
        [
            f"`search` p50 of {len(new_runs)} new common-word queries (1-3 words, never asked before)",
            f"{1000 * harness.median(new_runs):.1f} ms (max {1000 * max(new_runs):.0f} ms)",
        ],
        ["first `grep` after that", f"{out['first grep']:.2f} s"],
        [f"{out['reads']:,} `read` calls on distinct notes", f"{out['reads seconds']:.1f} s"],
        ["`grep` after the reads", f"{out['grep after reads']:.2f} s ({out['grep after reads agrees']})"],
    ]
    print(harness.table(["step", "time"], rows))
    greps = out["greps"]
    assert isinstance(greps, list)
    print()
    print(
        harness.table(
            [
                "grep over MCP HTTP vs `rg` on the export",
                "ours p50 ms",
                "rg p50 ms",
                "ours/rg",
                "lines",
                "output",
            ],
            [
                [
                    f"`{pattern}` {mode}",
                    f"{1000 * harness.median(ours):.0f}",
                    f"{1000 * harness.median(rg):.0f}",
                    harness.ratio(harness.median(ours), harness.median(rg)),
                    f"{count:,}",
                    agrees,
                ]
                for pattern, mode, ours, rg, count, agrees in greps
            ],
        )
    )
    samples = out["rss samples"]
    assert isinstance(samples, list)
    trail = ", ".join(f"{n // 1000}k: {kib / 1024:.0f}" for n, kib in samples[:: max(1, len(samples) // 10)])
    print(
        f"\nServer memory (MiB): VmRSS {ready_rss / 1024:.0f} after the first answer, "
        f"{int(out['rss after grep']) / 1024:.0f} after the greps (every text loaded once), "  # type: ignore[call-overload]
        f"during the reads {trail}; {int(out['rss end']) / 1024:.0f} at the end; "  # type: ignore[call-overload]
        f"**peak (VmHWM) {peak / 1024:.0f}**."
    )
    print(f"\nWall time {time.monotonic() - started:.0f} s; load average at end {harness.load_average()}.")
    return 0


def import_rows(args: argparse.Namespace, workdir: Path, relay: harness.LiveServer) -> list[list[str]]:
    """Time a fresh import (into a scratch database) and an unchanged re-import, against cp -r."""
    from bench import vaultgen

    vault = workdir / "vault"
    if not vault.is_dir():
        vaultgen.generate(vault, notes=args.notes, size=args.bytes)
    cp_seconds = timed(subprocess.run, ["cp", "-r", str(vault), str(workdir / "copy")], check=True)[0]
    reimport_seconds, _ = timed(harness.import_vault, relay, vault, folder=FOLDER, timeout=3600)
    return [
        ["`cp -r` of the vault", f"{cp_seconds:.2f} s"],
        [
            f"`import_vault` again, nothing changed ({reimport_seconds / cp_seconds:.2f}x cp -r)",
            f"{reimport_seconds:.2f} s",
        ],
    ]


if __name__ == "__main__":
    sys.exit(main())
