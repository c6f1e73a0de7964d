"""Memory per loaded document: RSS growth of the server process divided by the documents it loaded.

1. Our server alone, no connections: ``GET /d/<id>/as-update`` loads each of K imported ~2 KB notes into a
   live room (a pycrdt Doc plus its bookkeeping); the growth of daphne's VmRSS / K.
2. Against ``@y/websocket-server``: one y-websocket client held open on each of K documents (the reference
   keeps a room only while a client is connected, and starts it empty, so the driver fills it with the same
   text); the growth of each server's VmRSS / K, connection state included.

Both phases warm the server up first (requests on a throw-away document) so first-use allocations (imports,
URL resolver, database connection) are not charged to the documents.

    .venv/bin/python -m bench.run_memory [--docs 300]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import harness, vaultgen
from tests.e2e.liveserver import LiveServer
from tests.e2e.yclient import node_executable

FOLDER = "Mem"
SETTLE_SECONDS = 1.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=300, help="documents loaded (K)")
    parser.add_argument("--bytes", type=int, default=2000, help="approximate size of each note")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def settled_rss(server: LiveServer) -> int:
    time.sleep(SETTLE_SECONDS)
    assert server.pid is not None
    return harness.rss_kib(server.pid)


def hold_clients(server: LiveServer, targets: list[dict[str, Any]], workdir: Path) -> int:
    """Hold one client on each target; returns the server's settled VmRSS (KiB) while they are connected."""
    targets_file = workdir / f"targets-{server.name}-{len(targets)}.json"
    targets_file.write_text(json.dumps(targets))
    log_path = targets_file.with_suffix(".log")
    with log_path.open("w") as log:
        driver = subprocess.Popen(
            [
                node_executable(),
                str(harness.NODE_DRIVERS / "hold.mjs"),
                json.dumps({"targetsFile": str(targets_file)}),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    assert driver.stdout is not None and driver.stdin is not None
    try:
        line = driver.stdout.readline()
        status = json.loads(line) if line.startswith("{") else {"error": line}
        if not status.get("ready"):
            raise harness.BenchError(
                f"hold.mjs on {server.name}: {status.get('error')}\n{log_path.read_text()[-2000:]}"
            )
        rss = settled_rss(server)
        driver.stdin.close()
        driver.wait(60)
        return rss
    finally:
        if driver.poll() is None:
            driver.kill()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    harness.require_node_packages()
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-memory-"))
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("Memory per loaded document", source=source_text)
    started = time.monotonic()

    vault = workdir / "vault"
    stats = vaultgen.generate(vault, notes=args.docs + 1, size=args.bytes)
    files = sorted(p for p in vault.rglob("*.md"))
    warmup_file, files = files[0], files[1:]
    texts = {f"{FOLDER}/{p.relative_to(vault).as_posix()}": p.read_text() for p in files}
    warmup_path = f"{FOLDER}/{warmup_file.relative_to(vault).as_posix()}"
    text_bytes = sum(len(t.encode()) for t in texts.values())

    relay = harness.start_relay(workdir, source=source)
    reference: LiveServer | None = None
    rows: list[list[object]] = []
    try:
        harness.import_vault(relay, vault, folder=FOLDER)
        token = harness.create_token(relay)
        doc_ids = harness.document_ids(relay, token=token, folder=FOLDER)

        # Phase 1: our server, rooms loaded over HTTP, nothing connected.
        def as_update(path: str) -> bytes:
            return harness.http_get(f"{relay.http_url}/d/{doc_ids[path]}/as-update", token=token)

        for _ in range(20):
            as_update(warmup_path)
        before = settled_rss(relay)
        for path in texts:
            if not as_update(path):
                raise harness.BenchError(f"{path} loaded empty")
        after = settled_rss(relay)
        for path in texts:
            as_update(path)
        again = settled_rss(relay)
        http_per_doc = (after - before) / len(texts)
        print(
            f"Phase 1: daphne VmRSS {before / 1024:.1f} MiB warm, {after / 1024:.1f} MiB with {len(texts)} "
            f"rooms loaded, {again / 1024:.1f} MiB after reading them all once more.\n"
        )

        # Phase 2: both servers, one client held on each document.
        relay.stop()
        relay.start()
        reference = harness.start_reference(workdir)
        ours_targets = [
            {**harness.relay_target(relay, doc_ids[path], token), "expectLength": utf16_length(text)}
            for path, text in texts.items()
        ]
        ref_targets = [
            {
                **harness.reference_target(reference, f"mem-{i}"),
                "text": text,
                "expectLength": utf16_length(text),
            }
            for i, text in enumerate(texts.values())
        ]
        warm_text = warmup_file.read_text()
        hold_clients(
            relay,
            [
                {
                    **harness.relay_target(relay, doc_ids[warmup_path], token),
                    "expectLength": utf16_length(warm_text),
                }
            ],
            workdir,
        )
        hold_clients(
            reference,
            [
                {
                    **harness.reference_target(reference, "warmup"),
                    "text": warm_text,
                    "expectLength": utf16_length(warm_text),
                }
            ],
            workdir,
        )
        measured: dict[str, tuple[int, int]] = {}
        for server, targets in ((reference, ref_targets), (relay, ours_targets)):
            base = settled_rss(server)
            measured[server.name] = (base, hold_clients(server, targets, workdir))
        ref_base, ref_held = measured[reference.name]
        ours_base, ours_held = measured[relay.name]
        ref_per_doc = (ref_held - ref_base) / len(texts)
        ours_per_doc = (ours_held - ours_base) / len(texts)
    finally:
        relay.kill()
        if reference is not None:
            reference.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"{len(texts)} documents of {text_bytes / len(texts):,.0f} bytes on average "
        f"({stats.notes} generated notes, one used for warm-up).\n"
    )
    rows = [
        [
            "ours, loaded over HTTP (no connection)",
            f"{before / 1024:.1f}",
            f"{after / 1024:.1f}",
            f"{http_per_doc:.1f}",
            "-",
        ],
        [
            "reference, one client held per doc",
            f"{ref_base / 1024:.1f}",
            f"{ref_held / 1024:.1f}",
            f"{ref_per_doc:.1f}",
            "1.00x",
        ],
        [
            "ours, one client held per doc",
            f"{ours_base / 1024:.1f}",
            f"{ours_held / 1024:.1f}",
            f"{ours_per_doc:.1f}",
            harness.ratio(ours_per_doc, ref_per_doc),
        ],
    ]
    print(
        harness.table(
            ["server and load", "VmRSS before (MiB)", "VmRSS after (MiB)", "KiB per document", "ours/ref"],
            rows,
        )
    )
    print(f"\nWall time {time.monotonic() - started:.0f} s; load average at end {harness.load_average()}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
