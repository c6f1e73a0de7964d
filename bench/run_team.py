"""A team's load: many documents, many y-websocket clients each, one writer per document typing at a fixed
total rate; Lens Relay against ``@y/websocket-server`` in the same run, driven by the same Node process.

``bench/node/load.mjs`` connects every client, the writer of each document types a timestamped marker every
``documents / rate`` seconds (jittered), and every other client of the document times each marker from its
insert to its own observe. Every update must reach every client, on both servers, or the run fails. The
notes link to each other, so backlinks have work to do. Server CPU time over the typing window, divided by
the deliveries, gives CPU per delivered update, and the kernel's part of it (the sockets' sends and
receives, which both servers pay) beside it; the derive process's CPU is reported beside it too (issue 23:
derived work runs there, not in the server).

Loads alternate between the servers and each runs ``--reps`` times; medians are reported. A load is
``DOCUMENTSxCLIENTS@UPDATES_PER_SECOND``: ``1x2@20`` and ``1x10@50`` are the paced single-document loads,
``50x10@100`` and ``150x10@350`` the team loads. ``--workers 2`` runs Lens Relay as two workers on a fresh
PostgreSQL database and a private redis-server, one derive process beside the first worker; the reference is
one Node process, as it is deployed. ``--placement spread`` (the default) puts each document's clients on
both workers, so every update crosses Redis; ``grouped`` puts all of a document's clients on one worker
(document n on worker n mod 2), as a proxy hashing the document id would (docs/scale.md's advice).
``--modes process,inline`` adds a run with derived work inside the server (the layout before issue 23);
``none`` is the launcher with no derive process beside it, ``nice`` the derive process at a nice level
rather than in the idle scheduling class and ``asyncio`` the launcher on the standard library's event loop
rather than uvloop's (these two: one worker only). ``--keep`` keeps the work directory (the servers' logs)
and prints each run's typing window in wall-clock time, to find it there. Each run reports p50, p99 and the
slowest delivery (max); the table gives their medians over the runs.

    .venv/bin/python -m bench.run_team [--loads 1x2@20,1x10@50,50x10@100,150x10@350] [--seconds 20]
        [--reps 2] [--workers 1|2] [--placement spread|grouped] [--modes process] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import harness
from tests.e2e.liveserver import LiveServer, lensrelay_env, lensrelay_server, run_manage

FOLDER = "Team"


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
        default="1x2@20,1x10@50,50x10@100,150x10@350",
        help="DOCUMENTSxCLIENTS@UPDATES_PER_SECOND, comma-separated",
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="typing time of one run")
    parser.add_argument("--reps", type=int, default=2, help="runs per server and load")
    parser.add_argument("--workers", type=int, default=1, choices=(1, 2), help="Lens Relay workers")
    parser.add_argument(
        "--placement",
        default="spread",
        choices=("spread", "grouped"),
        help="two workers: each document's clients on both (spread) or all on one (grouped)",
    )
    parser.add_argument(
        "--modes",
        default="process",
        help="where Lens Relay derives: process (the default), nice (the derive process at a nice level, "
        "not in the idle class), inline, none (no derive process)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory (server logs, database)")
    return parser.parse_args(argv)


def write_notes(folder: Path, documents: int) -> None:
    folder.mkdir(parents=True)
    for n in range(documents):
        links = " ".join(f"[[doc {(n + k) % documents}]]" for k in (1, 2, 3))
        (folder / f"doc {n}.md").write_text(f"# Team note {n}\n\nSee {links}.\n", encoding="utf-8")


def derive_children(pid: int) -> list[int]:
    """The derive process the launcher started beside ``pid``."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:  # threads and children come and go while this reads
            children = (task / "children").read_text().split()
            found += [int(c) for c in children if b"derive" in Path(f"/proc/{c}/cmdline").read_bytes()]
        except FileNotFoundError:
            continue
    return found


@dataclass
class Relay:
    """Lens Relay as measured: its worker(s), the derive process, a token and the documents' ids."""

    workers: list[LiveServer]
    derive_pids: list[int]
    token: str
    doc_ids: dict[str, str]

    def targets(self, names: list[str], *, grouped: bool = False) -> list[dict[str, Any]]:
        """Where each document's clients connect: every worker in turn, or (grouped) the document's one."""
        return [
            {
                "room": self.doc_ids[name],
                "serverUrls": [
                    w.doc_server_url(self.doc_ids[name])
                    for w in ([self.workers[n % len(self.workers)]] if grouped else self.workers)
                ],
                "params": {"token": self.token},
            }
            for n, name in enumerate(names)
        ]

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self.workers if w.pid is not None]


def wait_for_derive(workers: list[LiveServer]) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert workers[0].pid is not None
        found = derive_children(workers[0].pid)
        if found:
            return found
        time.sleep(0.2)
    raise RuntimeError("the derive process did not start beside the server")


# One worker's layouts. "none": the launcher's shape with no derive process beside it (derived work left
# undone), the baseline the derive process must not slow; "nice": the derive process at its nice level
# only, as before it ran in the idle scheduling class (issue 36).
SINGLE_MODES: dict[str, dict[str, str]] = {
    "process": {"LENSRELAY_DERIVED_WORK": "process"},
    "asyncio": {"LENSRELAY_DERIVED_WORK": "process", "LENSRELAY_UVLOOP": "false"},
    "nice": {"LENSRELAY_DERIVED_WORK": "process", "LENSRELAY_DERIVE_IDLE": "false"},
    "inline": {"LENSRELAY_DERIVED_WORK": "inline"},
    "none": {"LENSRELAY_DERIVE_BESIDE": "false"},
}


@contextmanager
def single_relay(workdir: Path, vault: Path, mode: str) -> Iterator[Relay]:
    server = harness.start_relay(workdir / f"relay-{mode}", **SINGLE_MODES[mode])
    try:
        harness.import_vault(server, vault, folder=FOLDER)
        token = harness.create_token(server)
        doc_ids = harness.document_ids(server, token=token, folder=FOLDER)
        derive = (
            wait_for_derive([server]) if SINGLE_MODES[mode].get("LENSRELAY_DERIVED_WORK") == "process" else []
        )
        yield Relay([server], derive, token, doc_ids)
    finally:
        server.kill()


@contextmanager
def scaled_relay(workdir: Path, vault: Path, mode: str) -> Iterator[Relay]:
    # Imported here: the one-worker shape needs neither PostgreSQL nor Redis.
    import httpx

    from tests.e2e.outages import private_redis
    from tests.e2e.test_scaled import POSTGRES, fresh_database

    with ExitStack() as stack:
        cache = private_redis(workdir / "redis")
        cache.start()
        stack.callback(cache.kill)
        name = stack.enter_context(fresh_database())
        env = {
            "DATABASE_URL": f"{POSTGRES}/{name}",
            "REDIS_URL": f"redis://127.0.0.1:{cache.port}/0",
            # "none": no derive process at all (derived work left undone), the baseline it must not slow.
            "LENSRELAY_DERIVED_WORK": "process" if mode == "none" else mode,
        }
        workers: list[LiveServer] = []
        # Registered after the database: the workers are killed before it is dropped.
        stack.callback(lambda: [w.kill() for w in workers])
        commands = lensrelay_env(workdir / "commands", **env)
        run_manage(commands, "migrate", "--noinput", timeout=300)
        run_manage(commands, "import_vault", str(vault), "--folder", FOLDER, timeout=600)
        token = run_manage(commands, "create_token", "--name", "team", "--role", "edit").stdout.split()[-1]
        for n in range(2):
            # One derive process per database: beside the first worker only.
            extra = {} if n == 0 and mode != "none" else {"LENSRELAY_DERIVE_BESIDE": "false"}
            worker = lensrelay_server(workdir / f"worker{n}", **env, **extra)
            worker.setup = []
            workers.append(worker)
            worker.start()
        listed = httpx.get(
            f"{workers[0].http_url}/api/documents",
            params={"folder": FOLDER},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        ).json()
        doc_ids = {d["path"]: d["doc_id"] for d in listed}
        derive = wait_for_derive(workers) if mode == "process" else []
        yield Relay(workers, derive, token, doc_ids)


def measure(
    pids: list[int],
    derive_pids: list[int],
    targets: list[dict[str, Any]],
    load: Load,
    seconds: float,
    workdir: Path,
) -> dict[str, Any]:
    targets_file = workdir / f"targets-{time.monotonic_ns()}.json"
    targets_file.write_text(json.dumps(targets))
    derive_before = sum(harness.cpu_seconds(pid) for pid in derive_pids)
    result = harness.run_driver(
        "load.mjs",
        {
            "targetsFile": str(targets_file),
            "clientsPerDoc": load.clients,
            "writersPerDoc": 1,
            "seconds": seconds,
            "intervalMs": 1000 * load.documents / load.rate,
            "serverPids": pids,
            "clkTck": harness.CLK_TCK,
        },
        timeout=seconds + 300,
    )
    # The derive process works off the burst's tail after the typing stops: count it too.
    time.sleep(2 if derive_pids else 0)
    result["derive_cpu_s"] = sum(harness.cpu_seconds(pid) for pid in derive_pids) - derive_before
    result["ok"] = (
        result["errors"] == 0
        and result["delivered"] == result["expected"]
        and result["converged"] == load.documents
    )
    result["offered_rate"] = result["sent"] / seconds
    return result


def typing_window(result: dict[str, Any]) -> str:
    """The run's typing window in local wall-clock time, to find it in the kept servers' logs."""
    start, stop = (
        time.strftime("%H:%M:%S", time.localtime(result[k] / 1000))
        for k in ("typing_from_ms", "typing_to_ms")
    )
    return f"{start}-{stop}"


def summarize(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "p50": harness.median(r["p50"] for r in runs),
        "p99": harness.median(r["p99"] for r in runs),
        "p99_max": max(r["p99"] for r in runs),
        "max": harness.median(r["max"] for r in runs),
        "rate": harness.median(r["offered_rate"] for r in runs),
        "cpu_us": harness.median(1e6 * r["server_cpu_s"] / max(1, r["delivered"]) for r in runs),
        "derive_us": harness.median(1e6 * r["derive_cpu_s"] / max(1, r["delivered"]) for r in runs),
        "system_us": harness.median(1e6 * r["server_system_s"] / max(1, r["delivered"]) for r in runs),
        "ok": float(all(r["ok"] for r in runs)),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    loads = [Load.parse(text) for text in args.loads.split(",")]
    modes = args.modes.split(",")
    harness.require_node_packages()
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-team-"))
    harness.print_header(
        f"Team load: many documents, one writer each, {args.workers} worker(s)"
        + (f", clients {args.placement}" if args.workers > 1 else ""),
        source=harness.describe_source(harness.REPO_ROOT, None),
    )
    vault = workdir / "vault"
    # Fresh documents for every load and repetition, so no run starts on a text another one grew.
    for index, load in enumerate(loads):
        for rep in range(args.reps):
            for mode in modes:
                write_notes(vault / f"{mode}-l{index}r{rep}", load.documents)
    failures: list[str] = []
    results: dict[tuple[Load, str], list[dict[str, Any]]] = {}
    started = time.monotonic()
    relay_shape = scaled_relay if args.workers == 2 else single_relay
    try:
        with ExitStack() as stack:
            reference = harness.start_reference(workdir)
            stack.callback(reference.kill)
            relays = {mode: stack.enter_context(relay_shape(workdir, vault, mode)) for mode in modes}
            assert reference.pid is not None
            for index, load in enumerate(loads):
                for rep in range(args.reps):
                    rooms = [
                        {"room": f"l{index}r{rep}-{n}", "serverUrls": [reference.ws_url], "params": {}}
                        for n in range(load.documents)
                    ]
                    sides: list[tuple[str, list[int], list[int], list[dict[str, Any]]]] = [
                        ("reference", [reference.pid], [], rooms)
                    ]
                    for mode, relay in relays.items():
                        names = [f"{FOLDER}/{mode}-l{index}r{rep}/doc {n}.md" for n in range(load.documents)]
                        targets = relay.targets(names, grouped=args.placement == "grouped")
                        sides.append((mode, relay.pids, relay.derive_pids, targets))
                    if rep % 2:
                        sides.reverse()
                    for label, pids, derive_pids, targets in sides:
                        result = measure(pids, derive_pids, targets, load, args.seconds, workdir)
                        results.setdefault((load, label), []).append(result)
                        print(
                            f"  {load.label:<28} {label:<9} p50 {result['p50']:7.1f} ms  "
                            f"p99 {result['p99']:7.1f} ms  max {result['max']:7.1f} ms  "
                            f"delivered {result['delivered']}/{result['expected']}  "
                            f"cpu {result['server_cpu_s']:5.2f} s "
                            f"(kernel {result['server_system_s']:4.2f} s, "
                            f"derive {result['derive_cpu_s']:4.2f} s)  "
                            f"connect {result['connectMs'] / 1000:4.1f} s  "
                            f"ok={result['ok']}" + (f"  typing {typing_window(result)}" if args.keep else ""),
                            file=sys.stderr,
                            flush=True,
                        )
                        if not result["ok"]:
                            failures.append(f"{label} {load.label} rep {rep}: {result}")
    finally:
        if args.keep:
            print(f"work directory kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    rows = []
    for load in loads:
        ref = summarize(results[(load, "reference")])
        for mode in modes:
            ours = summarize(results[(load, mode)])
            rows.append(
                [
                    load.label,
                    mode,
                    f"{ref['p50']:.1f} / {ref['p99']:.1f} / {ref['max']:.0f} ms",
                    f"{ours['p50']:.1f} / {ours['p99']:.1f} / {ours['max']:.0f} ms "
                    f"(worst p99 {ours['p99_max']:.0f})",
                    harness.ratio(ours["p50"], ref["p50"]),
                    harness.ratio(ours["p99"], ref["p99"]),
                    f"{ref['cpu_us']:.0f} / {ours['cpu_us']:.0f} (+{ours['derive_us']:.0f} derive) µs",
                    f"{ref['system_us']:.0f} / {ours['system_us']:.0f} µs",
                    harness.ratio(ours["cpu_us"], ref["cpu_us"]),
                    "yes" if ours["ok"] and ref["ok"] else "NO",
                ]
            )
    print()
    print(
        harness.table(
            [
                "load (documents x clients, updates/s)",
                "derived work",
                "reference p50 / p99 / max",
                "Lens Relay p50 / p99 / max",
                "p50 ratio",
                "p99 ratio",
                "server CPU per delivered update (ref / ours)",
                "of it in the kernel (ref / ours)",
                "CPU ratio",
                "all delivered",
            ],
            rows,
        )
    )
    print(
        f"\n{args.workers} worker(s); {args.reps} runs per server and load, {args.seconds:g} s each; "
        f"{time.monotonic() - started:.0f} s"
    )
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
