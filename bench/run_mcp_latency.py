"""Latency of the MCP read tools over HTTP with many concurrent callers, against the official SDK's server.

On the 10,000-note vault of ``bench.run_grep`` (imported; ``--cache`` shared with it), C clients each open
their own MCP session on their own keep-alive connection and make K calls back to back, all clients at
once; every call is timed from sending the request to the parsed reply. One phase per tool:

- ``ping``: the transport alone (auth, session check, JSON-RPC), the floor under every tool;
- ``read`` of a random note (whole, ``cat -n``), ``glob`` with one of a few patterns (at most 100 paths,
  newest first), ``grep`` with one of a few regular expressions (paths of matching notes, at most 250),
  ``search`` with one of a few queries (ranked, 20 results with snippets).

The peer, run in the same invocation on the same machine: the official MCP Python SDK's ``MCPServer``
(streamable HTTP under uvicorn, stateful sessions) serving ``read``, ``glob`` and ``grep`` with the same
output format from the exported vault, loaded into memory at start (texts and modification times; ``grep``
is Python's ``re`` over every text). It has no full-text search; ``search`` is compared with our own
``ping``. Before the timed phases our server's text cache is loaded by a ``grep`` (as ``run_grep`` does),
both servers are left to go quiet (under 5 % of a core for a second: start-up work done), and every
session makes one untimed call of the tool.
Each phase is bounded (``--phase-seconds``): callers start no call after that; the table gives the calls made.

With ``--sdk-calls N`` (default 40; 0 leaves it out) each tool also gets a sequential phase driven by the
official ``mcp`` SDK's own client (``Client``, streamable HTTP, ``mode="legacy"``: the initialize
handshake both servers speak), the way an assistant calls: its p50 includes the SDK client's own work
(validation, its task group and streams), the same for both servers. The 20-session phases keep the
plain httpx client: twenty SDK clients in this one process would cost more CPU than either server on
two cores, and the load generator would set the pace.

    .venv/bin/python -m bench.run_mcp_latency [--clients 20] [--calls 50] [--cache /tmp/lensrelay-bench-cache]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness
from bench.run_grep import (
    FOLDER,
    McpSession,
    PreparedVault,
    ToolReply,
    add_vault_arguments,
    exported_paths,
    prepare_vault,
    progress,
)
from tests.e2e.liveserver import HOST, LiveServer

GLOB_PATTERNS = (
    f"{FOLDER}/Projects/**/*.md",
    f"{FOLDER}/**/Daily 0*.md",
    f"{FOLDER}/Ideas/*.md",
    f"{FOLDER}/**/*{{042,137}}*.md",
)
SEARCH_QUERIES = ("reading garden", "rocket", '"merge history"', "zürich", "insight -archive", "sync*")
PEER_GLOB_LIMIT = 100
PEER_READ_LIMIT = 2000
PEER_LINE_CHARS = 2000
PEER_GREP_LIMIT = 250
GREP_PATTERNS = ("04242", "rocket", "merge history", "z\u00fcrich", r"insight\w+", "Daily 0[0-9]7")

ArgsFactory = Callable[[random.Random], dict[str, Any]]


# --------------------------------------------------------------------- the peer: the SDK's own server


def load_vault(root: Path) -> tuple[dict[str, str], dict[str, float]]:
    """Every note under ``root`` by its relative path, and its modification time: the peer's memory."""
    texts: dict[str, str] = {}
    mtimes: dict[str, float] = {}
    for path in sorted(root.rglob("*.md")):
        relative = path.relative_to(root).as_posix()
        texts[relative] = path.read_text()
        mtimes[relative] = path.stat().st_mtime
    return texts, mtimes


def serve_peer(root: Path, port: int) -> None:
    """``read``, ``glob`` and ``grep`` over the notes under ``root`` held in memory, shaped like ours, on
    the SDK's MCPServer."""
    from mcp.server.mcpserver import MCPServer
    from wcmatch import glob as wcglob

    texts, mtimes = load_vault(root.resolve())
    newest_first = sorted(texts, key=lambda p: mtimes[p], reverse=True)
    server = MCPServer("peer-files", log_level="WARNING")

    @server.tool(name="read", structured_output=False)
    def read(file_path: str, offset: int = 1, limit: int = PEER_READ_LIMIT) -> str:
        text = texts.get(file_path)
        if text is None:
            raise ValueError(f"Error: Document not found: {file_path}")
        lines = text.splitlines()[offset - 1 : offset - 1 + limit]
        return "\n".join(f"{n:>6}\t{line[:PEER_LINE_CHARS]}" for n, line in enumerate(lines, start=offset))

    @server.tool(name="glob", structured_output=False)
    def glob(pattern: str) -> str:
        flags = wcglob.GLOBSTAR | wcglob.BRACE
        found = [p for p in newest_first if wcglob.globmatch(p, pattern, flags=flags)]
        if not found:
            return "No files found"
        shown = "\n".join(found[:PEER_GLOB_LIMIT])
        return shown if len(found) <= PEER_GLOB_LIMIT else f"{shown}\n(Results are truncated.)"

    @server.tool(name="grep", structured_output=False)
    def grep(pattern: str, head_limit: int = PEER_GREP_LIMIT) -> str:
        compiled = re.compile(pattern)
        found = [p for p, text in texts.items() if compiled.search(text)]
        if not found:
            return "No files found"
        return "\n".join(found[:head_limit] if head_limit else found)

    server.run("streamable-http", host=HOST, port=port)


def peer_server(workdir: Path, export_root: Path) -> LiveServer:
    data_dir = workdir / "peer"
    return LiveServer(
        lambda port: [
            sys.executable,
            "-m",
            "bench.run_mcp_latency",
            "--serve-peer",
            str(export_root),
            str(port),
        ],
        {"PYTHONPATH": str(harness.REPO_ROOT)},
        None,
        data_dir=data_dir,
        cwd=harness.REPO_ROOT,
        name="sdk-peer",
    )


# --------------------------------------------------------------------- load


@dataclass
class Phase:
    server: str
    tool: str
    clients: int
    via: str = "httpx"  # the client library: "httpx" (the MCP wire format by hand) or "SDK"
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: int = 0
    wall: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, max(0, int(-(-p * len(ordered) // 100)) - 1))]


class SdkSession:
    """The interface of ``McpSession`` over the official SDK client (one session, its own connection)."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self._stack = contextlib.AsyncExitStack()
        self._client: Any = None

    async def open(self) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        http = await self._stack.enter_async_context(
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=120.0)
        )
        transport = streamable_http_client(self.url, http_client=http)
        self._client = await self._stack.enter_async_context(Client(transport, mode="legacy"))

    async def request(self, method: str) -> None:
        assert method == "ping"
        await self._client.send_ping()

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolReply:
        import mcp_types

        result = await self._client.call_tool(name, arguments)
        text = "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))
        return ToolReply(text=text, is_error=bool(result.is_error))

    async def close(self) -> None:
        await self._stack.aclose()


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run_phase(
    *,
    label: str,
    server: LiveServer,
    sessions: Sequence[McpSession | SdkSession],
    tool: str,
    make_args: ArgsFactory,
    calls: int,
    seed: int,
    deadline_seconds: float,
    via: str = "httpx",
) -> Phase:
    phase = Phase(server=label, tool=tool, clients=len(sessions), via=via)
    # One untimed call per session first: connection, session row and code paths warm.
    await asyncio.gather(
        *(one_call(s, tool, make_args(random.Random(seed - i))) for i, s in enumerate(sessions))
    )
    assert server.pid is not None
    deadline = time.perf_counter() + deadline_seconds

    async def caller(index: int, session: McpSession | SdkSession) -> None:
        rng = random.Random(seed * 1000 + index)
        for done in range(calls):
            if time.perf_counter() > deadline:
                phase.skipped += calls - done
                return
            started = time.perf_counter()
            try:
                await one_call(session, tool, make_args(rng))
            except Exception as exc:  # a failed call is counted and shown, not fatal
                phase.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                continue
            phase.latencies.append(time.perf_counter() - started)

    cpu_before, client_before, started = harness.cpu_seconds(server.pid), process_cpu(), time.perf_counter()
    await asyncio.gather(*(caller(i, s) for i, s in enumerate(sessions)))
    phase.wall = time.perf_counter() - started
    phase.server_cpu = harness.cpu_seconds(server.pid) - cpu_before
    phase.client_cpu = process_cpu() - client_before
    return phase


async def one_call(session: McpSession | SdkSession, tool: str, arguments: dict[str, Any]) -> None:
    if tool == "ping":
        await session.request("ping")
        return
    reply = await session.call(tool, arguments)
    if reply.is_error:
        raise harness.BenchError(f"{tool} {arguments}: {reply.text[:200]}")


async def wait_until_quiet(server: LiveServer, *, limit: float = 60.0) -> None:
    """Until the server uses under 5 % of a core for a second (at most ``limit`` seconds)."""
    assert server.pid is not None
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        before = harness.cpu_seconds(server.pid)
        await asyncio.sleep(1.0)
        if harness.cpu_seconds(server.pid) - before < 0.05:
            return


def tool_arguments(paths: list[str]) -> dict[str, ArgsFactory]:
    return {
        "ping": lambda rng: {},
        "read": lambda rng: {"file_path": rng.choice(paths)},
        "glob": lambda rng: {"pattern": rng.choice(GLOB_PATTERNS)},
        "grep": lambda rng: {"pattern": rng.choice(GREP_PATTERNS)},
        "search": lambda rng: {"query": rng.choice(SEARCH_QUERIES)},
    }


# --------------------------------------------------------------------- the benchmark


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_vault_arguments(parser)
    parser.add_argument("--clients", type=int, default=20, help="concurrent callers, one session each")
    parser.add_argument("--calls", type=int, default=50, help="calls per caller per tool")
    parser.add_argument("--tools", default="ping,read,glob,grep,search")
    parser.add_argument("--solo-calls", type=int, default=20, help="calls of the one-client phase")
    parser.add_argument(
        "--sdk-calls",
        type=int,
        default=40,
        help="calls of the one-client phase driven by the official mcp SDK client (0: no such phase)",
    )
    parser.add_argument(
        "--phase-seconds",
        type=float,
        default=10.0,
        help="bound on each phase: callers start no call after this many seconds (the total stays under "
        "3 minutes); the table gives the calls completed",
    )
    parser.add_argument("--serve-peer", nargs=2, metavar=("ROOT", "PORT"), help=argparse.SUPPRESS)
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


async def measure(args: argparse.Namespace, prepared: PreparedVault, peer: LiveServer) -> list[Phase]:
    ours = prepared.server
    token = harness.create_token(ours, role="view")
    paths = exported_paths(prepared)
    factories = tool_arguments(paths)
    tools = args.tools.split(",")
    warm = McpSession(f"{ours.http_url}/mcp", token, name="bench-warm")
    await warm.open()
    progress("loading our text cache (one grep)")
    await warm.call("grep", {"pattern": "04242"})
    await warm.close()

    servers = {"ours": ours, "SDK peer": peer}
    for label, server in servers.items():
        # Start-up work in the background (our search index and folder mirror catching up) would
        # otherwise land in whichever phase comes first.
        progress(f"waiting for {label} to go quiet")
        await wait_until_quiet(server)
    sessions: dict[str, list[McpSession]] = {}
    for label, server in servers.items():
        # The peer ignores the bearer token; sending it keeps the requests byte-for-byte alike.
        sessions[label] = [
            McpSession(f"{server.http_url}/mcp", token, name=f"bench-{i}") for i in range(args.clients)
        ]
        await asyncio.gather(*(s.open() for s in sessions[label]))
    sdk_sessions: dict[str, SdkSession] = {}
    if args.sdk_calls:
        for label, server in servers.items():
            sdk_sessions[label] = SdkSession(f"{server.http_url}/mcp", token)
            await sdk_sessions[label].open()
    phases: list[Phase] = []
    try:
        for number, tool in enumerate(tools):
            order = list(servers) if number % 2 == 0 else list(reversed(servers))
            for label in order:
                if label == "SDK peer" and tool == "search":
                    continue
                for count in (1, args.clients):
                    phase = await run_phase(
                        label=label,
                        server=servers[label],
                        sessions=sessions[label][:count],
                        tool=tool,
                        make_args=factories[tool],
                        calls=args.solo_calls if count == 1 else args.calls,
                        seed=7 + number,
                        deadline_seconds=args.phase_seconds,
                    )
                    phases.append(phase)
                    show(phase)
                if label in sdk_sessions:
                    phase = await run_phase(
                        label=label,
                        server=servers[label],
                        sessions=[sdk_sessions[label]],
                        tool=tool,
                        make_args=factories[tool],
                        calls=args.sdk_calls,
                        seed=7 + number,
                        deadline_seconds=args.phase_seconds,
                        via="SDK",
                    )
                    phases.append(phase)
                    show(phase)
    finally:
        for group in sessions.values():
            await asyncio.gather(*(s.close() for s in group), return_exceptions=True)
        # Last opened, first closed: the SDK client's anyio cancel scopes, all entered in this task, must
        # be left in reverse order.
        for sdk in reversed(sdk_sessions.values()):
            await sdk.close()
    return phases


def show(phase: Phase) -> None:
    p50, p99 = 1000 * phase.percentile(50), 1000 * phase.percentile(99)
    progress(
        f"{phase.server:<8} {phase.tool:<7} {phase.clients:>3} clients ({phase.via}): p50 {p50:7.1f} ms  "
        f"p99 {p99:7.1f} ms  {len(phase.latencies) / phase.wall:6.1f} calls/s  errors {len(phase.errors)}  "
        f"not started {phase.skipped}"
    )


def report(phases: list[Phase], args: argparse.Namespace) -> None:
    floor = {(p.server, p.clients, p.via): p for p in phases if p.tool == "ping"}
    by_key = {(p.server, p.tool, p.clients, p.via): p for p in phases}
    rows = []
    for phase in phases:
        key = ("SDK peer", phase.tool, phase.clients, phase.via)
        peer = by_key.get(key) if phase.server == "ours" else None
        baseline = peer if peer is not None else floor.get(("ours", phase.clients, phase.via))
        if phase.server != "ours" or baseline is None:
            vs = "-"
        elif peer is not None:
            vs = (
                f"{harness.ratio(phase.percentile(50), peer.percentile(50))} / "
                f"{harness.ratio(phase.percentile(99), peer.percentile(99))} (peer)"
            )
        elif phase.tool != "ping":
            vs = (
                f"{harness.ratio(phase.percentile(50), baseline.percentile(50))} / "
                f"{harness.ratio(phase.percentile(99), baseline.percentile(99))} (our ping)"
            )
        else:
            vs = "-"
        done = len(phase.latencies)
        rows.append(
            [
                phase.tool,
                phase.server,
                phase.clients if phase.via == "httpx" else f"{phase.clients} (SDK client)",
                f"{done:,} in {phase.wall:.1f} s" + (" (bound)" if phase.skipped else ""),
                f"{1000 * phase.percentile(50):.1f}",
                f"{1000 * phase.percentile(90):.1f}",
                f"{1000 * phase.percentile(99):.1f}",
                f"{1000 * max(phase.latencies, default=float('nan')):.0f}",
                f"{done / phase.wall:,.0f}" if phase.wall else "-",
                f"{1000 * phase.server_cpu / max(done, 1):.1f}",
                f"{1000 * phase.client_cpu / max(done, 1):.1f}",
                len(phase.errors),
                vs,
            ]
        )
    print(
        harness.table(
            [
                "tool",
                "server",
                "clients",
                "calls completed",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "max ms",
                "calls/s",
                "server CPU ms/call",
                "load-generator CPU ms/call",
                "errors",
                "ours/peer p50 / p99",
            ],
            rows,
        )
    )
    errors = [(p, e) for p in phases for e in p.errors[:2]]
    for phase, error in errors:
        print(f"- error in {phase.server} {phase.tool} x{phase.clients}: {error}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_peer:
        serve_peer(Path(args.serve_peer[0]), int(args.serve_peer[1]))
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-mcp-"))
    started = time.monotonic()
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("MCP read tools: latency under concurrent callers", source=source_text)
    prepared = prepare_vault(args, workdir, source)
    peer = peer_server(workdir, prepared.export_root)
    try:
        progress("starting our server and the SDK peer")
        prepared.server.start()
        peer.start()
        phases = asyncio.run(measure(args, prepared, peer))
    finally:
        prepared.server.kill()
        peer.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    stats = prepared.stats
    sdk_version = subprocess.run(
        [sys.executable, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(
        f"Vault: {stats.notes:,} notes in {stats.folders:,} folders, {stats.bytes / 1e6:.1f} MB; database "
        f"{prepared.built}. Peer: `mcp` {sdk_version} `MCPServer`, streamable HTTP, on the export. "
        f"Server environment: {', '.join(args.env) or 'defaults'}.\n"
    )
    print(
        f"Each phase: 1 client making {args.solo_calls} calls, then {args.clients} concurrent clients making "
        f"{args.calls} calls each, every client with its own session and connection, back to back; a phase "
        f'stops starting calls after {args.phase_seconds:.0f} s ("(bound)": not every call was made). '
        f"Percentiles over all calls completed in the phase. "
        + (
            f'"1 (SDK client)": {args.sdk_calls} calls in a row through the official `mcp` SDK client. '
            if args.sdk_calls
            else ""
        )
        + f"CPU per call: server process (all threads) and this load generator (same machine, "
        f"{os.cpu_count()} CPUs).\n"
    )
    report(phases, args)
    print(f"\nWall time {time.monotonic() - started:.0f} s; load average at end {harness.load_average()}.")
    return 0 if not any(p.errors for p in phases) else 1


if __name__ == "__main__":
    sys.exit(main())
