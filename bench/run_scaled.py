"""A bounded load on one worker and on two: Yjs clients over many documents plus MCP sessions, for a fixed
time, on PostgreSQL and a private redis-server (loopback only).

    .venv/bin/python -m bench.run_scaled [--clients 200] [--documents 50] [--sessions 20] [--seconds 60]

Reports, per shape: Yjs updates sent and delivered per second, delivery latency p50/p99, errors (closed
sockets, failed MCP calls: must be zero), MCP calls per second, peak memory per worker, and how many
documents converged. Needs PostgreSQL (LENSRELAY_TEST_POSTGRES) and `redis-server` on PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench import harness
from bench.run_grep import McpSession
from tests.e2e.liveserver import LiveServer, lensrelay_server, run_manage
from tests.e2e.outages import private_redis
from tests.e2e.test_scaled import POSTGRES, fresh_database, require_services

FOLDER = "Load"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--documents", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval-ms", type=int, default=2000, help="mean time between a client's edits")
    parser.add_argument("--workers", default="1,2", help="shapes to measure, e.g. 1,2")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it (server logs)")
    return parser.parse_args(argv)


def write_vault(root: Path, documents: int) -> None:
    for n in range(documents):
        (root / f"Note {n:03}.md").write_text(
            f"# Note {n}\n\nSome text about topic {n % 7} and [[Note {n + 1:03}]].\n"
        )


async def mcp_load(
    urls: list[str], token: str, paths: list[str], sessions: int, seconds: float
) -> dict[str, Any]:
    opened = [McpSession(urls[i % len(urls)], token, name=f"load{i}") for i in range(sessions)]
    await asyncio.gather(*(s.open() for s in opened))
    calls, errors = 0, 0
    deadline = time.monotonic() + seconds

    async def work(index: int, session: McpSession) -> None:
        nonlocal calls, errors
        rng = random.Random(index)
        while time.monotonic() < deadline:
            tool, arguments = rng.choice(
                [
                    ("read", {"file_path": rng.choice(paths)}),
                    ("grep", {"pattern": f"topic {rng.randrange(7)}", "path": FOLDER}),
                    ("glob", {"pattern": "**/Note 0*.md", "path": FOLDER}),
                ]
            )
            try:
                reply = await session.call(tool, arguments)
                errors += reply.is_error
            except Exception:
                errors += 1
            calls += 1
            await asyncio.sleep(0.2)

    await asyncio.gather(*(work(i, s) for i, s in enumerate(opened)))
    await asyncio.gather(*(s.close() for s in opened))
    return {"calls": calls, "errors": errors}


@contextmanager
def killed_at_exit(servers: list[LiveServer]) -> Iterator[None]:
    """Kill the servers before the database they use is dropped."""
    try:
        yield
    finally:
        for server in servers:
            server.kill()


def measure(args: argparse.Namespace, workers: int, workdir: Path) -> dict[str, Any]:
    cache = private_redis(workdir / "redis")
    cache.start()
    servers: list[LiveServer] = []
    try:
        with fresh_database() as name, killed_at_exit(servers):
            env = {"DATABASE_URL": f"{POSTGRES}/{name}", "REDIS_URL": f"redis://127.0.0.1:{cache.port}/0"}
            for n in range(workers):
                server = lensrelay_server(workdir / f"w{workers}-{n}", **env)
                if n:
                    server.setup = []
                servers.append(server)
                server.start()
            vault = workdir / f"vault{workers}"
            vault.mkdir()
            write_vault(vault, args.documents)
            run_manage(env, "import_vault", str(vault), "--folder", FOLDER, timeout=300)
            token = run_manage(env, "create_token", "--name", "load", "--role", "edit").stdout.split()[-1]
            listed = httpx.get(
                f"{servers[0].http_url}/api/documents",
                params={"folder": FOLDER},
                headers={"Authorization": f"Bearer {token}"},
            ).json()
            targets = [
                {
                    "room": d["doc_id"],
                    "serverUrls": [f"{s.ws_url}/d/{d['doc_id']}/ws" for s in servers],
                    "params": {"token": token},
                }
                for d in listed
            ]
            targets_file = workdir / f"targets{workers}.json"
            targets_file.write_text(json.dumps(targets))
            peak = {s.pid: 0 for s in servers}
            stop = threading.Event()

            def sample() -> None:
                while not stop.wait(1.0):
                    for pid in peak:
                        assert pid is not None
                        peak[pid] = max(peak[pid], harness.rss_kib(pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            started = time.monotonic()
            driver: dict[str, Any] = {}

            def drive() -> None:
                driver.update(
                    harness.run_driver(
                        "load.mjs",
                        {
                            "targetsFile": str(targets_file),
                            "clientsPerDoc": max(1, args.clients // len(targets)),
                            "seconds": args.seconds,
                            "intervalMs": args.interval_ms,
                        },
                        timeout=args.seconds + 300,
                    )
                )

            thread = threading.Thread(target=drive)
            thread.start()
            time.sleep(5)  # let the clients connect and sync before the MCP sessions start
            paths = [d["path"] for d in listed]
            mcp = asyncio.run(
                mcp_load(
                    [f"{s.http_url}/mcp" for s in servers], token, paths, args.sessions, args.seconds - 5
                )
            )
            thread.join()
            stop.set()
            elapsed = time.monotonic() - started
            return {
                "workers": workers,
                **driver,
                "mcp_calls": mcp["calls"],
                "mcp_errors": mcp["errors"],
                "mcp_per_s": mcp["calls"] / max(1.0, args.seconds - 5),
                "peak_rss_mib": [round(kib / 1024) for kib in peak.values()],
                "elapsed": elapsed,
            }
    finally:
        for server in servers:
            server.kill()
        cache.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    require_services()
    harness.require_node_packages()
    harness.print_header("Scaled out: bounded load, one worker and two", source="working tree")
    results = []
    with tempfile.TemporaryDirectory(prefix="lensrelay-scaled-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for workers in (int(w) for w in args.workers.split(",")):
            results.append(measure(args, workers, workdir))
    rows = [
        (
            r["workers"],
            f"{r['clients']} / {r['documents']}",
            f"{r['sent'] / args.seconds:,.0f}",
            f"{r['delivered'] / args.seconds:,.0f}",
            f"{r['delivered']:,} of {r['expected']:,}",
            f"{r['p50']:.1f} / {r['p99']:.1f}",
            f"{r['errors']} + {r['mcp_errors']}",
            f"{r['mcp_per_s']:.1f}",
            ", ".join(str(m) for m in r["peak_rss_mib"]),
            f"{r['converged']} of {r['documents']}",
        )
        for r in results
    ]
    headers = (
        "workers",
        "Yjs clients / documents",
        "updates sent/s",
        "deliveries/s",
        "delivered",
        "delivery p50 / p99 ms",
        "errors (sockets + MCP)",
        "MCP calls/s",
        "peak RSS per worker MiB",
        "converged",
    )
    print(harness.table(headers, rows))
    load = harness.load_average()
    print(f"\nMCP sessions: {args.sessions}; {args.seconds:.0f} s per shape; load average at end: {load}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
