"""A team's load, not one document's: many documents, ten y-websocket clients each, one writer per document
typing at a fixed total rate; Lens Relay against ``@y/websocket-server`` in the same run, same driver.

``bench/node/load.mjs`` (one Node process) connects every client, the writer of each document types a
timestamped marker every ``documents / rate`` seconds (jittered), and every other client of the document
times each marker from its insert to its own observe. Every update must reach every client, on both
servers, or the run fails. The server's CPU time over the typing window gives CPU per delivered update.
Loads alternate between the servers and each runs ``--reps`` times; medians are reported.

    .venv/bin/python -m bench.run_team_capacity [--loads 50x10@100,150x10@350] [--seconds 20] [--reps 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import harness
from tests.e2e.liveserver import LiveServer

FOLDER = "Team"
SEED = "# Team note\n"


@dataclass(frozen=True)
class Load:
    documents: int
    clients: int
    rate: float  # updates per second, all documents together

    @classmethod
    def parse(cls, text: str) -> Load:
        shape, rate = text.split("@")
        documents, clients = shape.split("x")
        return cls(int(documents), int(clients), float(rate))

    @property
    def label(self) -> str:
        return f"{self.documents}x{self.clients}, {self.rate:g} updates/s"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--loads",
        default="50x10@100,150x10@350",
        help="DOCUMENTSxCLIENTS@UPDATES_PER_SECOND, comma-separated",
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="typing time of one run")
    parser.add_argument("--reps", type=int, default=2, help="runs per server and load")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (server logs, database)")
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


def measure(
    server: LiveServer, targets: list[dict[str, Any]], load: Load, seconds: float, workdir: Path
) -> dict[str, Any]:
    assert server.pid is not None
    targets_file = workdir / f"targets-{server.port}-{load.documents}.json"
    targets_file.write_text(json.dumps(targets))
    result = harness.run_driver(
        "load.mjs",
        {
            "targetsFile": str(targets_file),
            "clientsPerDoc": load.clients,
            "writersPerDoc": 1,
            "seconds": seconds,
            "intervalMs": 1000 * load.documents / load.rate,
            "serverPids": [server.pid],
            "clkTck": harness.CLK_TCK,
        },
        timeout=seconds + 300,
    )
    result["ok"] = (
        result["errors"] == 0
        and result["delivered"] == result["expected"]
        and result["converged"] == load.documents
    )
    result["offered_rate"] = result["sent"] / seconds
    return result


def summarize(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "p50": harness.median(r["p50"] for r in runs),
        "p99": harness.median(r["p99"] for r in runs),
        "p99_max": max(r["p99"] for r in runs),
        "rate": harness.median(r["offered_rate"] for r in runs),
        "cpu_us": harness.median(1e6 * r["server_cpu_s"] / max(1, r["delivered"]) for r in runs),
        "ok": float(all(r["ok"] for r in runs)),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    loads = [Load.parse(text) for text in args.loads.split(",")]
    harness.require_node_packages()
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-team-"))
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("Team load: many documents, one writer each", source=source_text)
    vault = workdir / "vault"
    vault.mkdir()
    # Fresh documents for every load and repetition, so no run starts on a text another one grew.
    for index, load in enumerate(loads):
        for rep in range(args.reps):
            (vault / f"l{index}r{rep}").mkdir()
            for n in range(load.documents):
                (vault / f"l{index}r{rep}" / f"doc {n}.md").write_text(SEED)
    relay = harness.start_relay(workdir, source=source)
    reference = harness.start_reference(workdir)
    failures: list[str] = []
    results: dict[tuple[Load, str], list[dict[str, Any]]] = {}
    started = time.monotonic()
    try:
        harness.import_vault(relay, vault, folder=FOLDER)
        token = harness.create_token(relay)
        doc_ids = harness.document_ids(relay, token=token, folder=FOLDER)
        for index, load in enumerate(loads):
            for rep in range(args.reps):
                names = [f"{FOLDER}/l{index}r{rep}/doc {n}.md" for n in range(load.documents)]
                relay_targets = [
                    {
                        "room": doc_ids[name],
                        "serverUrls": [relay.doc_server_url(doc_ids[name])],
                        "params": {"token": token},
                    }
                    for name in names
                ]
                reference_targets = [
                    {"room": f"l{index}r{rep}-{n}", "serverUrls": [reference.ws_url], "params": {}}
                    for n in range(load.documents)
                ]
                sides = [("reference", reference, reference_targets), ("lensrelay", relay, relay_targets)]
                if rep % 2:
                    sides.reverse()
                for label, server, targets in sides:
                    result = measure(server, targets, load, args.seconds, workdir)
                    results.setdefault((load, label), []).append(result)
                    print(
                        f"  {load.label:<28} {label:<9} p50 {result['p50']:7.1f} ms  "
                        f"p99 {result['p99']:7.1f} ms  "
                        f"delivered {result['delivered']}/{result['expected']}  "
                        f"cpu {result['server_cpu_s']:5.2f} s  ok={result['ok']}",
                        file=sys.stderr,
                    )
                    if not result["ok"]:
                        failures.append(f"{label} {load.label} rep {rep}: {result}")
    finally:
        relay.kill()
        reference.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    rows = []
    for load in loads:
        ours, ref = summarize(results[(load, "lensrelay")]), summarize(results[(load, "reference")])
        rows.append(
            [
                load.label,
                f"{ref['p50']:.1f} / {ref['p99']:.1f} ms",
                f"{ours['p50']:.1f} / {ours['p99']:.1f} ms (worst p99 {ours['p99_max']:.0f})",
                harness.ratio(ours["p99"], ref["p99"]),
                f"{ref['cpu_us']:.0f} / {ours['cpu_us']:.0f} µs",
                harness.ratio(ours["cpu_us"], ref["cpu_us"]),
                "yes" if ours["ok"] and ref["ok"] else "NO",
            ]
        )
    print()
    print(
        harness.table(
            [
                "load (documents x clients, updates/s)",
                "reference p50 / p99",
                "Lens Relay p50 / p99",
                "p99 ratio",
                "server CPU per delivered update (ref / ours)",
                "CPU ratio",
                "all delivered",
            ],
            rows,
        )
    )
    print(
        f"\n{args.reps} runs per server and load, {args.seconds:g} s each; {time.monotonic() - started:.0f} s"
    )
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
