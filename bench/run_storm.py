"""The assistants' storm (issue 36): many MCP sessions proposing into one note while a person types in it.

``--sessions`` sessions of the official ``mcp`` SDK client each call ``edit`` in a loop on one note, each
call a suggestion (a word of the session's own paragraph replaced), while ``bench/node/load.mjs`` types into
the same note over y-websocket: one writer at ``--rate`` keystrokes a second, every keystroke timed from its
insert to each of the other ``--clients - 1`` clients' observe. The same typing into a note nobody storms,
on the same server and alternately, is the peer. Every keystroke must reach every client and every edit the
server accepted must be in the note as its suggestion, or the run fails.

    .venv/bin/python -m bench.run_storm [--sessions 50] [--seconds 10] [--reps 3] [--clients 3] [--rate 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness
from bench.run_mcp_latency import SdkSession
from tests.e2e.liveserver import LiveServer
from tests.e2e.relay import read_text

FOLDER = "Storm"
WORDS = 400  # per session's paragraph: more than one session can propose in a run
# The refusals that say "the note changed meanwhile, try again" (suggestions/lifecycle/proposing.py).
RETRIED = re.compile(r"changed while the suggestion was written|kept changing while the edit was planned")


def note_text(sessions: int) -> str:
    paragraphs = [" ".join(f"s{i}w{k}" for k in range(WORDS)) for i in range(sessions)]
    return "# Storm\n\n" + "\n\n".join(paragraphs) + "\n"


@dataclass
class Storm:
    """What the sessions did: the words each replaced (accepted by the server), and the refusals."""

    made: dict[int, list[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    retries: int = 0
    latencies: list[float] = field(default_factory=list)


async def storm(
    url: str, token: str, path: str, sessions: int, *, ready: threading.Event, stop: threading.Event
) -> Storm:
    found = Storm()
    clients = [SdkSession(f"{url}/mcp", token) for _ in range(sessions)]
    await asyncio.gather(*(client.open() for client in clients))
    # Every session reads the note first, as an assistant does; the typing is timed once all have, so
    # what is measured is the edits (50 reads of the note at once hold the loop about half a second).
    await asyncio.gather(*(client.call("read", {"file_path": path}) for client in clients))
    ready.set()

    async def propose(i: int, client: SdkSession) -> None:
        found.made[i] = []
        k = 0
        while not stop.is_set() and k < WORDS:
            started = time.perf_counter()
            arguments = {"file_path": path, "old_string": f"s{i}w{k} ", "new_string": f"S{i}W{k} "}
            reply = await client.call("edit", arguments)
            # As an assistant does when told the note changed under its edit: the same edit again.
            while reply.is_error and RETRIED.search(reply.text) and not stop.is_set():
                found.retries += 1
                reply = await client.call("edit", arguments)
            found.latencies.append(1000 * (time.perf_counter() - started))
            if reply.is_error and RETRIED.search(reply.text) and stop.is_set():
                break  # the run ended while it was trying again
            if reply.is_error:
                found.errors.append(f"session {i} word {k}: {reply.text[:200]}")
            else:
                found.made[i].append(k)
            k += 1

    try:
        await asyncio.gather(*(propose(i, client) for i, client in enumerate(clients)))
    finally:
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)
    return found


def type_into(
    server: LiveServer, doc_id: str, token: str, args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    targets_file = workdir / f"targets-{time.monotonic_ns()}.json"
    target = {"room": doc_id, "serverUrls": [server.doc_server_url(doc_id)], "params": {"token": token}}
    targets_file.write_text(json.dumps([target]))
    assert server.pid is not None
    return harness.run_driver(
        "load.mjs",
        {
            "targetsFile": str(targets_file),
            "clientsPerDoc": args.clients,
            "writersPerDoc": 1,
            "seconds": args.seconds,
            "intervalMs": 1000 / args.rate,
            "serverPids": [server.pid],
            "clkTck": harness.CLK_TCK,
        },
        timeout=args.seconds + 300,
    )


def run_once(
    server: LiveServer,
    tokens: dict[str, str],
    ids: dict[str, str],
    name: str,
    args: argparse.Namespace,
    workdir: Path,
    *,
    stormed: bool,
) -> dict[str, Any]:
    path = f"{FOLDER}/{name}"
    stop, ready = threading.Event(), threading.Event()
    result: dict[str, Any] = {}
    outcome: list[Storm] = []
    thread = None
    if stormed:
        thread = threading.Thread(
            target=lambda: outcome.append(
                asyncio.run(
                    storm(server.http_url, tokens["suggest"], path, args.sessions, ready=ready, stop=stop)
                )
            )
        )
        thread.start()
        if not ready.wait(120):
            raise RuntimeError("the sessions did not open and read the note")
        time.sleep(1.0)  # they are proposing before the typing starts
    try:
        result = type_into(server, ids[path], tokens["edit"], args, workdir)
    finally:
        stop.set()
        if thread is not None:
            thread.join()
    text = read_text(harness.http_get(f"{server.http_url}/d/{ids[path]}/as-update", token=tokens["edit"]))
    result["ok"] = (
        result["errors"] == 0 and result["delivered"] == result["expected"] and result["converged"] == 1
    )
    if stormed:
        done = outcome[0]
        missing = [(i, k) for i, words in done.made.items() for k in words if f"@@S{i}W{k}++}}" not in text]
        result["edits"] = sum(len(words) for words in done.made.values())
        result["edit_errors"] = len(done.errors)
        result["retries"] = done.retries
        result["edit_p50"] = harness.median(done.latencies) if done.latencies else 0.0
        result["missing"] = len(missing)
        result["ok"] = result["ok"] and not missing and not done.errors
        if done.errors:
            print(f"    first refusal: {done.errors[0]}", file=sys.stderr)
    return result


def derived_in_step(server: LiveServer, *, timeout: float = 300.0) -> None:
    """Wait until the derive process has read the whole update log (its backlog on /metrics is 0)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        metrics = harness.http_get(f"{server.http_url}/metrics").decode()
        backlog = re.search(r"^lensrelay_derive_backlog_rows (\S+)$", metrics, re.MULTILINE)
        if backlog is not None and float(backlog.group(1)) == 0:
            return
        time.sleep(0.5)
    raise RuntimeError("the derive process did not catch up with the import")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=50, help="MCP sessions proposing into the note")
    parser.add_argument("--seconds", type=float, default=10.0, help="typing time of one run")
    parser.add_argument("--reps", type=int, default=3, help="runs with the storm and without it")
    parser.add_argument("--clients", type=int, default=3, help="y-websocket clients on the note (one types)")
    parser.add_argument("--rate", type=float, default=20.0, help="keystrokes per second")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    harness.require_node_packages()
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-storm-"))
    harness.print_header(
        f"The assistants' storm: {args.sessions} MCP sessions and a person typing in one note",
        source=harness.describe_source(harness.REPO_ROOT, None),
    )
    vault = workdir / "vault"
    vault.mkdir()
    names = [f"{mode} {rep}.md" for rep in range(args.reps) for mode in ("storm", "quiet")]
    for name in names:
        (vault / name).write_text(note_text(args.sessions), encoding="utf-8")
    failures: list[str] = []
    runs: dict[str, list[dict[str, Any]]] = {"storm": [], "quiet": []}
    try:
        server = harness.start_relay(workdir / "relay", LENSRELAY_METRICS_ALLOW="127.0.0.1")
        try:
            harness.import_vault(server, vault, folder=FOLDER)
            tokens = {role: harness.create_token(server, role=role) for role in ("edit", "suggest")}
            ids = harness.document_ids(server, token=tokens["edit"], folder=FOLDER)
            derived_in_step(server)  # the import's indexing is done before the first run, not during it
            for rep in range(args.reps):
                order = ("storm", "quiet") if rep % 2 == 0 else ("quiet", "storm")
                for mode in order:
                    result = run_once(
                        server, tokens, ids, f"{mode} {rep}.md", args, workdir, stormed=mode == "storm"
                    )
                    runs[mode].append(result)
                    extra = (
                        f"  edits {result['edits']} (p50 {result['edit_p50']:.0f} ms, refused "
                        f"{result['edit_errors']}, retried {result['retries']}, missing {result['missing']})"
                        if mode == "storm"
                        else ""
                    )
                    print(
                        f"  {mode:<6} p50 {result['p50']:7.1f} ms  p95 {result['p95']:7.1f} ms  "
                        f"p99 {result['p99']:7.1f} ms  delivered {result['delivered']}/{result['expected']}"
                        f"{extra}  ok={result['ok']}",
                        file=sys.stderr,
                        flush=True,
                    )
                    if not result["ok"]:
                        failures.append(f"{mode} rep {rep}: {result}")
        finally:
            server.kill()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    def med(mode: str, key: str) -> float:
        return harness.median(r[key] for r in runs[mode])

    print()
    print(
        harness.table(
            [
                "typing into the note",
                "keystroke p50 / p95 / p99",
                "p95 ratio",
                "edits accepted (median)",
                "all arrived",
            ],
            [
                [
                    f"with {args.sessions} sessions proposing" if mode == "storm" else "nobody else in it",
                    f"{med(mode, 'p50'):.1f} / {med(mode, 'p95'):.1f} / {med(mode, 'p99'):.1f} ms",
                    harness.ratio(med(mode, "p95"), med("quiet", "p95")),
                    f"{med(mode, 'edits'):.0f}" if mode == "storm" else "—",
                    "yes" if all(r["ok"] for r in runs[mode]) else "NO",
                ]
                for mode in ("storm", "quiet")
            ],
        )
    )
    print(
        f"\n{args.reps} runs each of {args.seconds:g} s, {args.clients} clients, {args.rate:g} keystrokes/s"
    )
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
