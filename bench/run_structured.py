"""What structured results cost: `search` and `glob` answered with `structuredContent` and `resource_link`
items (a 2025-11-25 session) against the same calls answered as text only (a 2025-03-26 session, which
gets the text alone), on one server, in alternating rounds; and `read`, whose answer is text in both.

On the 10,000-note vault of ``bench.run_grep`` (``--cache`` shared with it), C sessions of each version
make K calls each, all at once, per round; rounds alternate which version goes first, both make the same
calls, and those calls are made once untimed before either. ``--together`` runs both versions' sessions at
once instead (2C concurrent): the cost of one call, with the machine's slow and quick moments falling on
both alike (one after the other, ratios of the same code swing ±15 % between rounds on 2 cores). Latency is
timed from sending the request to the parsed reply, as ``bench.run_mcp_latency`` does.

    .venv/bin/python -m bench.run_structured [--clients 10] [--calls 30] [--rounds 3] [--cache DIR]
        [--together]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.run_grep import McpSession, add_vault_arguments, exported_paths, prepare_vault, progress
from bench.run_mcp_latency import Phase, run_phase, tool_arguments, wait_until_quiet

TEXT_ONLY, STRUCTURED = "2025-03-26", "2025-11-25"
# `read` answers text alone in every version: its ratio shows what the version itself costs.
TOOLS = ("read", "search", "glob")


class VersionedSession(McpSession):
    """A bench session that speaks the protocol version it is given."""

    def __init__(self, url: str, token: str, *, version: str, name: str) -> None:
        super().__init__(url, token, name=name)
        self.version = version

    def _headers(self) -> dict[str, str]:
        headers = super()._headers()
        if "MCP-Protocol-Version" in headers:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    async def open(self) -> None:
        import bench.run_grep as grep_module

        saved = grep_module.PROTOCOL_VERSION
        grep_module.PROTOCOL_VERSION = self.version
        try:
            await super().open()
        finally:
            grep_module.PROTOCOL_VERSION = saved


async def measure(args: argparse.Namespace, prepared: Any) -> list[Phase]:
    server = prepared.server
    token = harness.create_token(server, role="view")
    factories = tool_arguments(exported_paths(prepared))
    url = f"{server.http_url}/mcp"
    warm = McpSession(url, token, name="bench-warm")
    await warm.open()
    await warm.call("grep", {"pattern": "04242"})
    await warm.close()
    await wait_until_quiet(server)
    sessions = {
        version: [
            VersionedSession(url, token, version=version, name=f"{version}-{i}") for i in range(args.clients)
        ]
        for version in (TEXT_ONLY, STRUCTURED)
    }
    for group in sessions.values():
        await asyncio.gather(*(s.open() for s in group))
    phases: list[Phase] = []
    try:
        for round_number in range(args.rounds):
            for tool in TOOLS:
                calls = {
                    "server": server,
                    "tool": tool,
                    "make_args": factories[tool],
                    "calls": args.calls,
                    "seed": 11 + round_number,
                    "deadline_seconds": args.phase_seconds,
                }
                if args.together:
                    pair = await asyncio.gather(
                        *(run_phase(label=v, sessions=sessions[v], **calls) for v in (TEXT_ONLY, STRUCTURED))
                    )
                    done = list(zip((TEXT_ONLY, STRUCTURED), pair, strict=True))
                else:
                    # The round's calls once untimed first, so that neither version pays for a query's first
                    # run in the database (without it the first paid: ratios swung 0.94-1.64 between rounds).
                    await run_phase(label="warm", sessions=sessions[TEXT_ONLY], **calls)
                    order = [TEXT_ONLY, STRUCTURED] if round_number % 2 == 0 else [STRUCTURED, TEXT_ONLY]
                    done = [(v, await run_phase(label=v, sessions=sessions[v], **calls)) for v in order]
                for version, phase in done:
                    phases.append(phase)
                    progress(
                        f"round {round_number + 1} {tool:<6} {version}: "
                        f"p50 {1000 * phase.percentile(50):.1f} ms p99 {1000 * phase.percentile(99):.1f} ms "
                        f"errors {len(phase.errors)}"
                    )
    finally:
        for group in sessions.values():
            await asyncio.gather(*(s.close() for s in group), return_exceptions=True)
    return phases


def report(phases: list[Phase], args: argparse.Namespace) -> None:
    print("| round | tool | text only p50 / p99 (ms) | structured p50 / p99 (ms) | ratio p50 / p99 |")
    print("|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {}
    for round_number in range(args.rounds):
        for tool in TOOLS:
            pair = [p for p in phases if p.tool == tool][round_number * 2 : round_number * 2 + 2]
            text = next(p for p in pair if p.server == TEXT_ONLY)
            data = next(p for p in pair if p.server == STRUCTURED)
            t50, t99, s50, s99 = (
                1000 * text.percentile(50),
                1000 * text.percentile(99),
                1000 * data.percentile(50),
                1000 * data.percentile(99),
            )
            print(
                f"| {round_number + 1} | {tool} | {t50:.1f} / {t99:.1f} | {s50:.1f} / {s99:.1f} | "
                f"{s50 / t50:.2f} / {s99 / t99:.2f} |"
            )
            ratios.setdefault(tool, []).append(s50 / t50)
    for tool, values in ratios.items():
        print(f"\n{tool}: median p50 ratio {statistics.median(values):.3f} over {len(values)} rounds")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_vault_arguments(parser)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phase-seconds", type=float, default=60.0)
    harness.add_source_arguments(parser)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-structured-"))
    started = time.monotonic()
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("MCP structured results against text only", source=source_text)
    prepared = prepare_vault(args, workdir, source)
    try:
        prepared.server.start()
        phases = asyncio.run(measure(args, prepared))
    finally:
        prepared.server.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"{args.clients} sessions of each version, {args.calls} calls each per phase.\n")
    report(phases, args)
    print(f"\nWall time {time.monotonic() - started:.0f} s; load average at end {harness.load_average()}.")
    return 0 if not any(p.errors for p in phases) else 1


if __name__ == "__main__":
    sys.exit(main())
