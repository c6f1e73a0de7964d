"""What every benchmark needs: our server and the reference started side by side, the Node drivers, process
probes (/proc), the machine's description and Markdown tables.

Servers come from the e2e harness (:mod:`tests.e2e.liveserver`) so the benchmark runs exactly what the tests
run: daphne on 127.0.0.1 with its own SQLite database, and ``@y/websocket-server`` 0.1.1.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.e2e.liveserver import HOST, REPO_ROOT, LiveServer, lensrelay_env, reference_server
from tests.e2e.yclient import NODE_MODULES, node_executable

BENCH_DIR = Path(__file__).resolve().parent
NODE_DRIVERS = BENCH_DIR / "node"
CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(RuntimeError):
    """A benchmark could not run, or its result cannot be trusted (lost updates, divergence)."""


# --------------------------------------------------------------------- servers


def require_node_packages() -> None:
    missing = [
        n for n in ("yjs", "y-websocket", "ws", "@y/websocket-server") if not (NODE_MODULES / n).is_dir()
    ]
    if missing:
        raise BenchError(f"missing Node packages {missing}: run `npm ci` in {NODE_MODULES.parent}")


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--commit",
        help="benchmark this git revision (exported with `git archive` into the work directory) instead of "
        "the working tree, e.g. HEAD; the working tree may be mid-edit",
    )
    parser.add_argument(
        "--patch",
        type=Path,
        action="append",
        default=[],
        help="with --commit: apply this patch (-p1) to the export first, to measure a candidate change; "
        "may be repeated (see bench/experiments/)",
    )
    parser.add_argument(
        "--source", type=Path, help="run our server from this directory instead (e.g. a patched copy)"
    )


def resolve_source(args: argparse.Namespace, workdir: Path) -> tuple[Path, str]:
    """The directory our server runs from, and how to describe it in the results."""
    if args.source is not None:
        return args.source.resolve(), f"directory {args.source}"
    if args.patch and args.commit is None:
        raise BenchError("--patch needs --commit (the working tree is never modified)")
    source = server_source(args.commit, workdir)
    description = describe_source(source, args.commit)
    for patch in args.patch:
        subprocess.run(["patch", "-p1", "-s", "-d", str(source), "-i", str(patch.resolve())], check=True)
        description += f" + `{patch.as_posix()}`"
    return source, description


def server_source(commit: str | None, workdir: Path) -> Path:
    """The directory our server runs from: the repository itself, or an export of ``commit``."""
    if commit is None:
        return REPO_ROOT
    target = workdir / "source"
    target.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "archive", commit], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    node_dir = target / "tests" / "e2e" / "node"
    if node_dir.is_dir() and not (node_dir / "node_modules").exists():
        (node_dir / "node_modules").symlink_to(NODE_MODULES)
    return target


def describe_source(source: Path, commit: str | None) -> str:
    head = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", commit or "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if commit is not None:
        return f"commit {head} (`git archive {commit}`)"
    dirty = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    return f"working tree on {head}" + (f" with {len(dirty)} modified tracked files" if dirty else "")


def relay_server(workdir: Path, *, source: Path = REPO_ROOT, **env: str) -> LiveServer:
    """Our server under daphne, run from ``source``, its SQLite database in ``workdir/lensrelay``.

    Like :func:`tests.e2e.liveserver.lensrelay_server` (same environment, migrate before the first
    start) but able to run another copy of the code.
    """
    data_dir = workdir / "lensrelay"
    data_dir.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    # The launcher operators run (docs/scale.md): daphne with our frame limit and direct frame sends.
    # Exports of commits older than it run plain daphne.
    application: list[str] = []
    if (source / "lensrelay" / "server" / "serve.py").exists():
        server = [python, "-m", "lensrelay.server.serve"]
    elif (source / "lensrelay" / "serve.py").exists():  # before the reorganisation of issue 19
        server = [python, "-m", "lensrelay.serve"]
    else:
        server = [python, "-m", "daphne"]
        application = ["lensrelay.asgi:application"]
    # An installed server keeps its modules' bytecode; this machine sets PYTHONDONTWRITEBYTECODE, which
    # would make every start (and the first connect, which imports a few modules lazily) compile them.
    bytecode = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(workdir / "pycache")}
    return LiveServer(
        lambda port: [*server, "-b", HOST, "-p", str(port), *application],
        lensrelay_env(data_dir, **{**bytecode, **env}),
        "/ready",
        data_dir=data_dir,
        cwd=source,
        setup=[[python, "manage.py", "migrate", "--noinput"]],
        name="lensrelay",
    )


def start_relay(workdir: Path, *, source: Path = REPO_ROOT, **env: str) -> LiveServer:
    server = relay_server(workdir, source=source, **env)
    server.start()
    return server


def start_reference(workdir: Path) -> LiveServer:
    server = reference_server(workdir)
    server.start()
    return server


def manage(server: LiveServer, *args: str, timeout: float = 600.0) -> str:
    """``manage.py ARGS`` against ``server``'s database, from the code the server runs; returns stdout."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=server.cwd,
        env=server.full_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise BenchError(
            f"manage.py {' '.join(args)} failed:\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
        )
    return result.stdout


def create_token(server: LiveServer, *, role: str = "edit") -> str:
    output = manage(server, "create_token", "--name", f"bench-{os.getpid()}", "--role", role)
    return output.strip().splitlines()[-1].strip()


def import_vault(server: LiveServer, path: Path, *, folder: str, timeout: float = 600.0) -> str:
    return manage(server, "import_vault", str(path), "--folder", folder, timeout=timeout).strip()


def http_get(url: str, *, token: str | None = None, timeout: float = 30.0) -> bytes:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body: bytes = response.read()
        return body


def document_ids(server: LiveServer, *, token: str, folder: str) -> dict[str, str]:
    """User-facing path (``Folder/x.md``) -> doc id, for every document of ``folder``."""
    rows = json.loads(http_get(f"{server.http_url}/api/documents?folder={folder}", token=token))
    return {row["path"]: row["doc_id"] for row in rows}


def relay_target(server: LiveServer, doc_id: str, token: str) -> dict[str, Any]:
    """Where a y-websocket client connects for one of our documents."""
    return {"serverUrl": server.doc_server_url(doc_id), "room": doc_id, "params": {"token": token}}


def reference_target(server: LiveServer, room: str) -> dict[str, Any]:
    return {"serverUrl": server.ws_url, "room": room, "params": {}}


# --------------------------------------------------------------------- Node drivers


def run_driver(script: str, args: Mapping[str, Any], *, timeout: float = 180.0) -> dict[str, Any]:
    """Run ``bench/node/<script>`` with one JSON argument; returns its one-line JSON result."""
    argv = [node_executable(), str(NODE_DRIVERS / script), json.dumps(args)]
    result = subprocess.run(argv, cwd=BENCH_DIR, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise BenchError(f"{script} printed no result (exit {result.returncode}):\n{result.stderr[-3000:]}")
    parsed: dict[str, Any] = json.loads(lines[-1])
    if "error" in parsed:
        raise BenchError(f"{script} failed: {parsed['error']}\n{result.stderr[-2000:]}")
    return parsed


# --------------------------------------------------------------------- process probes


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise BenchError(f"no VmRSS for pid {pid}")


# --------------------------------------------------------------------- reporting


def machine() -> dict[str, str]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    node_version = subprocess.run([node_executable(), "--version"], capture_output=True, text=True).stdout
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": f"{mem_kib / 1024 / 1024:.1f} GiB",
        "load average (1/5/15 min) at start": load_average(),
        "python": platform.python_version(),
        "node": node_version.strip(),
        "kernel": platform.release(),
    }


def load_average() -> str:
    """Other work on the machine skews absolute numbers (ratios less so): print it with every result."""
    return " / ".join(Path("/proc/loadavg").read_text().split()[:3])


def command_line() -> str:
    """How this benchmark was invoked, to paste next to its results."""
    module = Path(sys.argv[0]).resolve().relative_to(REPO_ROOT).with_suffix("")
    return shlex.join([".venv/bin/python", "-m", ".".join(module.parts), *sys.argv[1:]])


def print_header(title: str, *, source: str) -> None:
    print(f"## {title}\n")
    print(f"Command: `{command_line()}`\n")
    print(f"- server code: {source}")
    for key, value in machine().items():
        print(f"- {key}: {value}")
    print()


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def ratio(ours: float, reference: float) -> str:
    return f"{ours / reference:.2f}x" if reference else "n/a"
