"""A team's load: many documents, many y-websocket clients, every client typing now and then
(`bench/node/load.mjs`), against `@y/websocket-server` in the same run; Lens Relay twice, with derived work
inline (every server process derives backlinks, search rows and notifications after each change: the
layout before issue 23) and in the derive process beside it (the default).

Reports delivery p50/p99 (ms) and server CPU per delivered update; for the derive-process run the derive
process's CPU too. The notes link to each other, so backlinks have work to do.

    .venv/bin/python -m bench.run_team_load [--documents 50] [--clients-per-doc 10] [--rate 100]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import harness

FOLDER = "Team"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=50)
    parser.add_argument("--clients-per-doc", type=int, default=10)
    parser.add_argument("--rate", type=float, default=100.0, help="updates/s offered over all clients")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--modes", default="reference,inline,process")
    parser.add_argument("--keep", action="store_true")
    return parser.parse_args(argv)


def write_vault(root: Path, documents: int) -> None:
    for i in range(documents):
        links = " ".join(f"[[Note{(i + k) % documents}]]" for k in (1, 2, 3))
        (root / f"Note{i}.md").write_text(f"# Note {i}\n\nSee {links}.\n", encoding="utf-8")


def derive_children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"derive" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(int(child))
    return found


def drive(
    targets: list[dict[str, Any]], workdir: Path, args: argparse.Namespace, name: str
) -> dict[str, Any]:
    targets_file = workdir / f"targets-{name}.json"
    targets_file.write_text(json.dumps(targets))
    clients = len(targets) * args.clients_per_doc
    return harness.run_driver(
        "load.mjs",
        {
            "targetsFile": str(targets_file),
            "clientsPerDoc": args.clients_per_doc,
            "seconds": args.seconds,
            "intervalMs": 1000.0 * clients / args.rate,
        },
        timeout=args.seconds + 400,
    )


def measured(pids: list[int], run: Any) -> tuple[dict[str, Any], list[float]]:
    before = [harness.cpu_seconds(pid) for pid in pids]
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.update(run()))
    thread.start()
    thread.join()
    return result, [harness.cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    harness.require_node_packages()
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-team-"))
    rows = []
    try:
        vault = workdir / "vault"
        vault.mkdir()
        write_vault(vault, args.documents)
        for mode in args.modes.split(","):
            started = time.monotonic()
            if mode == "reference":
                server = harness.start_reference(workdir / mode)
                targets = [harness.reference_target(server, f"team-{i}") for i in range(args.documents)]
            else:
                server = harness.start_relay(workdir / mode, LENSRELAY_DERIVED_WORK=mode)
                harness.import_vault(server, vault, folder=FOLDER)
                token = harness.create_token(server)
                ids = harness.document_ids(server, token=token, folder=FOLDER)
                targets = [harness.relay_target(server, doc_id, token) for doc_id in ids.values()]
            try:
                assert server.pid is not None
                pids = [server.pid]
                if mode == "process":
                    time.sleep(3)  # the derive process starts beside the server
                    pids += derive_children(server.pid)
                result, cpu = measured(pids, lambda t=targets, m=mode: drive(t, workdir, args, m))
            finally:
                server.stop()
            delivered = max(1, int(result["delivered"]))
            rows.append(
                {
                    "mode": mode,
                    **result,
                    "server_cpu_s": round(cpu[0], 2),
                    "derive_cpu_s": round(cpu[1], 2) if len(cpu) > 1 else None,
                    "server_us_per_delivery": round(cpu[0] / delivered * 1e6, 1),
                    "wall_s": round(time.monotonic() - started, 1),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        reference = next((r for r in rows if r["mode"] == "reference"), None)
        print()
        print(
            harness.table(
                [
                    "mode",
                    "delivered/expected",
                    "p50 ms",
                    "p99 ms",
                    "p99 / ref",
                    "server µs/delivery",
                    "derive CPU s",
                ],
                [
                    [
                        r["mode"],
                        f"{r['delivered']}/{r['expected']}",
                        f"{r['p50']:.1f}",
                        f"{r['p99']:.1f}",
                        f"{r['p99'] / reference['p99']:.2f}x" if reference else "-",
                        r["server_us_per_delivery"],
                        r["derive_cpu_s"] if r["derive_cpu_s"] is not None else "-",
                    ]
                    for r in rows
                ],
            )
        )
    finally:
        if args.keep:
            print(f"work directory kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
