"""grep over MCP against ripgrep over the same vault on disk, in the same run.

A generated vault (``bench.vaultgen``: 10,000 notes of ~2 KB) is imported with ``manage.py import_vault``
and exported again with ``manage.py export_vault``; ripgrep searches the export, our server searches the
texts it holds. For each pattern and output mode the three are timed in turn, N times:

- ours end to end: one ``tools/call grep`` POST to ``/mcp`` (an open session, keep-alive connection, the
  server's text cache loaded by an earlier call), from sending the request to the parsed reply;
  ``head_limit: 0`` so that both sides produce every result;
- ripgrep: ``rg`` started on the exported folder, until it exits with its whole output read;
- the engine alone: ``mcp_tools.engines.grep.grep_result`` in a separate Python process, on the same texts
  read from the export (what the server's search costs without HTTP, sessions and the text cache).

Our results are checked against ripgrep's: the same files, the same ``path:line:text`` lines.

Setting up a 10,000-note vault takes about two minutes (import + export); ``--cache DIR`` keeps the imported
database and the export there and reuses them on later runs (``bench.run_mcp_latency`` shares it).

    .venv/bin/python -m bench.run_grep [--notes 10000] [--runs 9] [--cache /tmp/lensrelay-bench-cache]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench import harness, vaultgen
from tests.e2e.liveserver import LiveServer

FOLDER = "Vault"
PROTOCOL_VERSION = "2025-11-25"
ACCEPT = "application/json, text/event-stream"  # what MCP clients send
CALL_TIMEOUT = 120.0
DB_FILES = ("db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm")

# (label, pattern): literal and regex, frequent and rare; counts are measured, not assumed.
PATTERNS: tuple[tuple[str, str], ...] = (
    ("literal, rare", "04242"),
    ("literal, non-ASCII", "rocket🚀"),
    ("regex with a required literal", r"reading\s+garden"),
    ("regex without a literal", r"\d{4}-\d{2}-1\d"),
)
MODES = ("files_with_matches", "content")


# --------------------------------------------------------------------- MCP over plain HTTP


class McpError(RuntimeError):
    """A JSON-RPC error, or an HTTP status other than the one MCP prescribes."""


def rpc_messages(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a JSON or SSE (``text/event-stream``) response body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        found = []
        for block in response.text.replace("\r\n", "\n").split("\n\n"):
            data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
            if data:
                found.append(json.loads("\n".join(data)))
        return found
    body = response.json()
    return body if isinstance(body, list) else [body]


@dataclass(frozen=True)
class ToolReply:
    text: str
    is_error: bool


class McpSession:
    """One MCP session (handshake era) on its own keep-alive connection, as one assistant would hold it."""

    def __init__(self, url: str, token: str, *, name: str = "bench") -> None:
        self.url = url
        self.token = token
        self.name = name
        self.session_id: str | None = None
        self._next_id = 0
        # verify=False: plain http, and loading CA certificates is a good part of a client's start-up.
        self._http = httpx.AsyncClient(timeout=CALL_TIMEOUT, verify=False)

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": ACCEPT,
            "Authorization": f"Bearer {self.token}",
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = PROTOCOL_VERSION
        return headers

    async def open(self) -> None:
        response = await self._http.post(
            self.url,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": self.name, "version": "1.0"},
                },
            },
            headers=self._headers(),
        )
        if response.status_code != 200:
            raise McpError(f"initialize: HTTP {response.status_code} {response.text[:300]}")
        self.session_id = response.headers["Mcp-Session-Id"]
        notified = await self._http.post(
            self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self._headers()
        )
        if notified.status_code != 202:
            raise McpError(f"notifications/initialized: HTTP {notified.status_code}")

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            body["params"] = dict(params)
        response = await self._http.post(self.url, json=body, headers=self._headers())
        if response.status_code != 200:
            raise McpError(f"{method}: HTTP {response.status_code} {response.text[:300]}")
        replies = [m for m in rpc_messages(response) if m.get("id") == self._next_id]
        if len(replies) != 1:
            raise McpError(f"{method}: no single reply in {response.text[:300]}")
        if "error" in replies[0]:
            raise McpError(f"{method}: {replies[0]['error']}")
        result: dict[str, Any] = replies[0]["result"]
        return result

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolReply:
        result = await self.request("tools/call", {"name": name, "arguments": dict(arguments)})
        text = "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
        return ToolReply(text=text, is_error=bool(result.get("isError", False)))

    async def close(self) -> None:
        if self.session_id is not None:
            # The server may already be gone; a session left behind expires.
            with contextlib.suppress(httpx.HTTPError):
                await self._http.delete(self.url, headers=self._headers())
        await self._http.aclose()


# --------------------------------------------------------------------- the imported and exported vault


@dataclass(frozen=True)
class PreparedVault:
    """Our server (not started) whose database holds the vault as folder ``FOLDER``, and its export."""

    server: LiveServer
    export_root: Path  # holds FOLDER/, as export_vault wrote it
    stats: vaultgen.VaultStats
    built: str  # how the database came to be, for the results


def add_vault_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--bytes", type=int, default=2000, help="approximate size of each note")
    parser.add_argument(
        "--cache",
        type=Path,
        help="keep the imported database and the export in DIR/vault-<notes>x<bytes> and reuse them "
        "(skips ~2 minutes of import and export on later runs)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for our server, e.g. LENSRELAY_POLL_SECONDS=3600; may be repeated",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")


def server_env(args: argparse.Namespace) -> dict[str, str]:
    pairs = [item.split("=", 1) for item in args.env]
    if any(len(pair) != 2 for pair in pairs):
        raise harness.BenchError("--env takes KEY=VALUE")
    return {key: value for key, value in pairs}


def prepare_vault(args: argparse.Namespace, workdir: Path, source: Path) -> PreparedVault:
    """Generate, import and export the vault, or reuse a cached database and export."""
    server = harness.relay_server(workdir, source=source, **server_env(args))
    cached = None if args.cache is None else args.cache.resolve() / f"vault-{args.notes}x{args.bytes}"
    if cached is not None and (cached / "meta.json").is_file():
        meta = json.loads((cached / "meta.json").read_text())
        for name in DB_FILES:
            if (cached / name).exists():
                shutil.copyfile(cached / name, server.data_dir / name)
        server.setup = []
        harness.manage(server, "migrate", "--noinput")  # a no-op unless the code moved on since
        return PreparedVault(
            server=server,
            export_root=cached / "export",
            stats=vaultgen.VaultStats(**meta["stats"]),
            built=f"reused from `{cached}` ({meta['built']})",
        )

    progress("generating the vault")
    stats = vaultgen.generate(workdir / "vault", notes=args.notes, size=args.bytes)
    harness.manage(server, "migrate", "--noinput")
    server.setup = []
    progress("importing it (manage.py import_vault)")
    started = time.perf_counter()
    harness.import_vault(server, workdir / "vault", folder=FOLDER)
    import_seconds = time.perf_counter() - started
    export_root = workdir / "export"
    progress("exporting it (manage.py export_vault)")
    started = time.perf_counter()
    harness.manage(server, "export_vault", str(export_root / FOLDER), "--folder", FOLDER)
    export_seconds = time.perf_counter() - started
    built = (
        f"built in this run: import_vault {import_seconds:.0f} s, export_vault {export_seconds:.0f} s, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    if cached is not None:
        cached.mkdir(parents=True, exist_ok=True)
        for name in DB_FILES:
            if (server.data_dir / name).exists():
                shutil.copyfile(server.data_dir / name, cached / name)
        shutil.copytree(export_root, cached / "export", dirs_exist_ok=True)
        meta = {"stats": stats.__dict__, "built": built}
        (cached / "meta.json").write_text(json.dumps(meta))
    return PreparedVault(server=server, export_root=export_root, stats=stats, built=built)


def exported_paths(prepared: PreparedVault) -> list[str]:
    """User-facing paths (``Vault/x/y.md``) of every exported note, sorted."""
    root = prepared.export_root
    return sorted(p.relative_to(root).as_posix() for p in (root / FOLDER).rglob("*.md"))


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------- the three ways to grep


def rg_executable() -> str:
    found = shutil.which("rg")
    if found is None:
        raise harness.BenchError("ripgrep (`rg`) is not on PATH: apt-get install -y ripgrep")
    return found


def rg_argv(pattern: str, mode: str) -> list[str]:
    flags = ["-l"] if mode == "files_with_matches" else ["-n", "--no-heading", "--with-filename"]
    return [rg_executable(), "--no-config", *flags, "-e", pattern, FOLDER]


def run_rg(export_root: Path, pattern: str, mode: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    result = subprocess.run(rg_argv(pattern, mode), cwd=export_root, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode not in (0, 1):  # 1: no match
        raise harness.BenchError(f"rg failed ({result.returncode}): {result.stderr[:500]}")
    return seconds, result.stdout.splitlines()


async def run_ours(session: McpSession, pattern: str, mode: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    reply = await session.call("grep", {"pattern": pattern, "output_mode": mode, "head_limit": 0})
    seconds = time.perf_counter() - started
    if reply.is_error:
        raise harness.BenchError(f"grep {pattern!r} {mode}: {reply.text[:500]}")
    lines = [] if reply.text == "No matches found." else reply.text.splitlines()
    return seconds, lines


# Runs in a separate interpreter from the server's source tree, so the engine measured is the server's.
_ENGINE_SCRIPT = """
import json, sys, time
from pathlib import Path
from mcp_tools.engines.grep import GrepOptions, grep_result
plan = json.loads(sys.argv[1])
root = Path(plan["root"])
docs = sorted((p.relative_to(root).as_posix(), p.read_text()) for p in (root / plan["folder"]).rglob("*.md"))
timings = {}
for pattern, mode in plan["cases"]:
    options = GrepOptions(pattern=pattern, output_mode=mode, head_limit=0, timeout=60.0)
    grep_result(docs, options)  # warm: compiled pattern, caches
    runs = []
    for _ in range(plan["runs"]):
        started = time.perf_counter()
        grep_result(docs, options)
        runs.append(time.perf_counter() - started)
    timings[f"{pattern}\\t{mode}"] = runs
print(json.dumps(timings))
"""


def engine_timings(
    source: Path, export_root: Path, cases: list[tuple[str, str]], runs: int
) -> dict[tuple[str, str], list[float]]:
    plan = {"root": str(export_root), "folder": FOLDER, "cases": cases, "runs": runs}
    result = subprocess.run(
        [sys.executable, "-c", _ENGINE_SCRIPT, json.dumps(plan)],
        cwd=source,
        env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise harness.BenchError(f"engine timing failed:\n{result.stderr[-2000:]}")
    raw: dict[str, list[float]] = json.loads(result.stdout)
    return {tuple(key.split("\t")): value for key, value in raw.items()}  # type: ignore[misc]


# --------------------------------------------------------------------- the benchmark


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_vault_arguments(parser)
    parser.add_argument("--runs", type=int, default=9, help="timed runs per pattern, mode and side")
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


@dataclass
class CaseResult:
    label: str
    pattern: str
    mode: str
    ours: list[float]
    rg: list[float]
    files: int
    lines: int
    agrees: str


async def measure(args: argparse.Namespace, prepared: PreparedVault) -> dict[str, Any]:
    server = prepared.server
    token = harness.create_token(server, role="view")
    session = McpSession(f"{server.http_url}/mcp", token, name="bench-grep")
    await session.open()
    try:
        progress("first grep (loads the server's text cache)")
        cold_seconds, _ = await run_ours(session, "04242", "files_with_matches")
        second_seconds, _ = await run_ours(session, "04242", "files_with_matches")
        results: list[CaseResult] = []
        for label, pattern in PATTERNS:
            for mode in MODES:
                ours: list[float] = []
                rg: list[float] = []
                ours_lines: list[str] = []
                rg_lines: list[str] = []
                for run in range(args.runs):
                    # Alternate who goes first, so neither always runs right after the other's burst.
                    if run % 2:
                        seconds, rg_lines = run_rg(prepared.export_root, pattern, mode)
                        rg.append(seconds)
                        seconds, ours_lines = await run_ours(session, pattern, mode)
                        ours.append(seconds)
                    else:
                        seconds, ours_lines = await run_ours(session, pattern, mode)
                        ours.append(seconds)
                        seconds, rg_lines = run_rg(prepared.export_root, pattern, mode)
                        rg.append(seconds)
                agrees = compare(ours_lines, rg_lines)
                files = (
                    len({line.split(":", 1)[0] for line in rg_lines}) if mode == "content" else len(rg_lines)
                )
                results.append(CaseResult(label, pattern, mode, ours, rg, files, len(rg_lines), agrees))
                progress(
                    f"{label:<30} {mode:<18} ours {1000 * harness.median(ours):7.1f} ms  "
                    f"rg {1000 * harness.median(rg):7.1f} ms  ({agrees})"
                )
    finally:
        await session.close()
    return {"cold": cold_seconds, "second": second_seconds, "results": results}


def compare(ours: list[str], rg: list[str]) -> str:
    if sorted(ours) == sorted(rg):
        return "same output"
    only_ours, only_rg = set(ours) - set(rg), set(rg) - set(ours)
    example = next(iter(only_ours or only_rg), "")
    return f"DIFFERS: {len(only_ours)} lines only ours, {len(only_rg)} only rg, e.g. {example[:120]!r}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rg_version = subprocess.run([rg_executable(), "--version"], capture_output=True, text=True).stdout
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-grep-"))
    started = time.monotonic()
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("grep over MCP vs ripgrep", source=source_text)
    prepared = prepare_vault(args, workdir, source)
    try:
        progress("starting our server")
        prepared.server.start()
        measured = asyncio.run(measure(args, prepared))
        server_cpu = harness.cpu_seconds(prepared.server.pid) if prepared.server.pid else 0.0
    finally:
        prepared.server.kill()
    progress("timing the engine alone")
    results: list[CaseResult] = measured["results"]
    engine = engine_timings(
        source, prepared.export_root, [(r.pattern, r.mode) for r in results], max(3, args.runs // 2)
    )
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)

    stats = prepared.stats
    print(
        f"Vault: {stats.notes:,} notes in {stats.folders:,} folders, {stats.bytes / 1e6:.1f} MB "
        f"(`python -m bench.vaultgen`, seed 1); database {prepared.built}. ripgrep: "
        f"{rg_version.splitlines()[0]}, default threads, on the export (page cache warm after the first "
        f"run). "
        f"Server environment: {', '.join(args.env) or 'defaults'}.\n"
    )
    print(
        f"First grep after start (text cache empty: every text loaded from the database): "
        f"{measured['cold']:.1f} s; the same call again: {1000 * measured['second']:.0f} ms.\n"
    )
    rows = []
    for r in results:
        ours_ms, rg_ms = 1000 * harness.median(r.ours), 1000 * harness.median(r.rg)
        engine_ms = 1000 * harness.median(engine[(r.pattern, r.mode)])
        rows.append(
            [
                f"{r.label}: `{r.pattern}`",
                r.mode,
                f"{r.files:,} / {r.lines:,}",
                f"{ours_ms:.0f} ({1000 * min(r.ours):.0f}-{1000 * max(r.ours):.0f})",
                f"{rg_ms:.0f} ({1000 * min(r.rg):.0f}-{1000 * max(r.rg):.0f})",
                harness.ratio(ours_ms, rg_ms),
                f"{engine_ms:.0f}",
                f"{ours_ms - engine_ms:.0f}",
                r.agrees,
            ]
        )
    print(
        f"Medians of {args.runs} runs each, alternating ours and rg (min-max in brackets); engine alone: "
        f"median of {max(3, args.runs // 2)} runs in a separate process.\n"
    )
    print(
        harness.table(
            [
                "pattern",
                "output_mode",
                "files / lines",
                "ours over HTTP, ms",
                "rg, ms",
                "ours/rg",
                "engine alone, ms",
                "ours - engine, ms",
                "output vs rg",
            ],
            rows,
        )
    )
    print(
        f"\nServer CPU time over the whole run: {server_cpu:.1f} s. Wall time "
        f"{time.monotonic() - started:.0f} s; load average at end {harness.load_average()}."
    )
    return 0 if all(r.agrees == "same output" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
