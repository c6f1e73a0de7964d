"""Update throughput and fan-out latency: Lens Relay against ``@y/websocket-server``, same run, same driver.

For each client count C (writer included) and each writing mode, ``bench/node/fanout.mjs`` connects C
y-websocket clients to one fresh document, the writer appends one-character updates, and every other client
times each update from the writer's insert to its own observe. Modes:

- ``burst``: as fast as the client allows, one insert per Node event-loop turn (throughput);
- ``paced``: a fixed offered rate well under both servers' capacity (latency without queueing).

Runs alternate between the two servers. Every run must deliver every update to every client and converge;
at the end our server is SIGKILLed, restarted, and each document it served must hold the converged text.

    .venv/bin/python -m bench.run_sync [--clients 2,10,50] [--updates 1000] [--reps 3]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pycrdt import Doc, Text

from bench import harness
from tests.e2e.liveserver import LiveServer

SEED = "# Bench\n"
FOLDER = "Bench"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="2,10,50", help="client counts, writer included")
    parser.add_argument("--updates", type=int, default=1000, help="updates per burst run")
    parser.add_argument("--paced-seconds", type=float, default=2.5, help="length of a paced run")
    parser.add_argument(
        "--paced-rate", type=float, default=200.0, help="offered updates/s in paced runs, at most"
    )
    parser.add_argument(
        "--paced-deliveries",
        type=float,
        default=2000.0,
        help="lower the paced rate so that updates/s x receivers stays under this: the one Node process that "
        "hosts every client must not be the queue being measured",
    )
    parser.add_argument("--reps", type=int, default=3, help="runs per server, mode and client count")
    parser.add_argument("--modes", default="burst,paced")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (server logs, database)")
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


def paced_rate(args: argparse.Namespace, *, clients: int) -> float:
    return min(args.paced_rate, args.paced_deliveries / (clients - 1))


def text_sha256(update: bytes) -> str:
    doc: Doc = Doc()
    doc.apply_update(update)
    return hashlib.sha256(str(doc.get("contents", type=Text)).encode()).hexdigest()


def measure(
    server: LiveServer, target: dict[str, Any], *, clients: int, updates: int, rate: float
) -> dict[str, Any]:
    """One driver run; the server's CPU time is read by the driver over the measured window only."""
    assert server.pid is not None
    result = harness.run_driver(
        "fanout.mjs",
        {
            **target,
            "clients": clients,
            "updates": updates,
            "rate": rate,
            "seed": SEED,
            "serverPid": server.pid,
            "clkTck": harness.CLK_TCK,
        },
    )
    if result["server_cpu_s"] is None:
        raise harness.BenchError(f"the driver could not read /proc/{server.pid}/stat")
    result["ok"] = result["converged"] and result["lost"] == 0
    return result


def summarize(runs: list[dict[str, Any]]) -> dict[str, float]:
    def med(key: str) -> float:
        return harness.median(r[key] for r in runs)

    def med_latency(key: str) -> float:
        return harness.median(r["latency_ms"][key] for r in runs)

    return {
        "dps": med("deliveries_per_s"),
        "dps_min": min(r["deliveries_per_s"] for r in runs),
        "dps_max": max(r["deliveries_per_s"] for r in runs),
        "p50": med_latency("p50"),
        "p99": med_latency("p99"),
        "cpu_ms_per_1k": harness.median(1e6 * r["server_cpu_s"] / r["deliveries"] for r in runs),
        "frames_per_receiver": harness.median(r["frames_observed"] / r["receivers"] for r in runs),
        "ok": float(all(r["ok"] for r in runs)),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    client_counts = [int(c) for c in args.clients.split(",")]
    modes = args.modes.split(",")
    harness.require_node_packages()
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-sync-"))
    started = time.monotonic()
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("Fan-out: update throughput and latency", source=source_text)

    vault = workdir / "vault"
    vault.mkdir()
    plan = [(mode, c, rep) for mode in modes for c in client_counts for rep in range(args.reps)]
    for mode, c, rep in plan:
        (vault / f"{mode}-{c}-{rep}.md").write_text(SEED)

    relay = harness.start_relay(workdir, source=source)
    reference = harness.start_reference(workdir)
    failures: list[str] = []
    results: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    relay_docs: list[tuple[str, str]] = []  # (doc id, expected text sha256)
    try:
        harness.import_vault(relay, vault, folder=FOLDER)
        token = harness.create_token(relay)
        doc_ids = harness.document_ids(relay, token=token, folder=FOLDER)
        for mode, c, rep in plan:
            name = f"{mode}-{c}-{rep}"
            rate = 0.0 if mode == "burst" else paced_rate(args, clients=c)
            updates = args.updates if mode == "burst" else round(rate * args.paced_seconds)
            doc_id = doc_ids[f"{FOLDER}/{name}.md"]
            sides = [
                ("reference", reference, harness.reference_target(reference, name)),
                ("lensrelay", relay, harness.relay_target(relay, doc_id, token)),
            ]
            if rep % 2:
                sides.reverse()
            for label, server, target in sides:
                result = measure(server, target, clients=c, updates=updates, rate=rate)
                results.setdefault((mode, label, c), []).append(result)
                print(
                    f"  {name:<12} {label:<9} {result['deliveries_per_s']:>9,.0f} deliveries/s  "
                    f"p50 {result['latency_ms']['p50']:7.1f} ms  p99 {result['latency_ms']['p99']:7.1f} ms  "
                    f"server cpu {result['server_cpu_s']:5.2f} s  ok={result['ok']}",
                    file=sys.stderr,
                )
                if not result["ok"]:
                    failures.append(
                        f"{label} {name}: lost {result['lost']}, diverged {result['diverged_clients']}"
                    )
                if label == "lensrelay":
                    relay_docs.append((doc_id, result["final_sha256"]))

        # Every update a client saw must have been durable: kill without warning, restart, compare.
        relay.kill()
        relay.start()
        persisted = sum(
            text_sha256(harness.http_get(f"{relay.http_url}/d/{doc_id}/as-update", token=token)) == sha
            for doc_id, sha in relay_docs
        )
        if persisted != len(relay_docs):
            failures.append(f"after SIGKILL + restart only {persisted}/{len(relay_docs)} documents match")
    finally:
        relay.kill()
        reference.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print_tables(results, modes=modes, client_counts=client_counts, args=args)
    print(
        f"\nEvery run: all deliveries counted and all clients converged: "
        f"{'yes' if not failures else 'NO'}. After SIGKILL + restart, {persisted}/{len(relay_docs)} of our "
        f"documents held the converged text. Wall time {time.monotonic() - started:.0f} s; "
        f"load average at end {harness.load_average()}."
    )
    for failure in failures:
        print(f"- FAILED: {failure}")
    if args.keep:
        print(f"\nWork directory kept: {workdir}")
    return 1 if failures else 0


def print_tables(
    results: dict[tuple[str, str, int], list[dict[str, Any]]],
    *,
    modes: list[str],
    client_counts: list[int],
    args: argparse.Namespace,
) -> None:
    for mode in modes:
        if mode == "burst":
            print(
                f"\n### Burst: {args.updates} one-character updates, one per writer event-loop turn "
                f"(median of {args.reps} runs per cell)\n"
            )
        else:
            rates = ", ".join(f"{c} clients {paced_rate(args, clients=c):.0f}/s" for c in client_counts)
            print(
                f"\n### Paced: updates offered at a fixed rate for {args.paced_seconds:g} s ({rates}; "
                f"median of {args.reps} runs per cell)\n"
            )
        rows = []
        for c in client_counts:
            ref = summarize(results[(mode, "reference", c)])
            ours = summarize(results[(mode, "lensrelay", c)])
            rows.append(
                [
                    c,
                    f"{ref['dps']:,.0f}",
                    f"{ours['dps']:,.0f} ({ours['dps_min']:,.0f}-{ours['dps_max']:,.0f})",
                    harness.ratio(ours["dps"], ref["dps"]),
                    f"{ref['p50']:.1f} / {ref['p99']:.1f}",
                    f"{ours['p50']:.1f} / {ours['p99']:.1f}",
                    f"{harness.ratio(ours['p50'], ref['p50'])} / {harness.ratio(ours['p99'], ref['p99'])}",
                    f"{ref['cpu_ms_per_1k']:.0f} / {ours['cpu_ms_per_1k']:.0f}",
                    f"{ours['frames_per_receiver']:.0f}",
                    "yes" if ref["ok"] and ours["ok"] else "NO",
                ]
            )
        print(
            harness.table(
                [
                    "clients",
                    "ref deliveries/s",
                    "ours deliveries/s (min-max)",
                    "throughput ours/ref",
                    "ref p50 / p99 ms",
                    "ours p50 / p99 ms",
                    "latency ours/ref p50 / p99",
                    "server CPU ms per 1k deliveries ref / ours",
                    "ours frames per receiver",
                    "all delivered + converged",
                ],
                rows,
            )
        )


if __name__ == "__main__":
    sys.exit(main())
