"""How long each heavy admin request of issue 23 stalls the server's event loop, read from the server's own
loop-lag gauge (``lensrelay.server.looplag``, logging every lag over ``--log-ms``): the review page of a 1 MB
note with 500 tracked changes, that note's version diffed to now (50 changed lines), and Accept all of 500
suggestions on one note. Each request runs alone; its figure is the largest lag logged from its start until
``--settle`` seconds after its answer (what it set off afterwards, the suggestion follower say, counts).

    .venv/bin/python -m bench.run_loop_lag --commit HEAD --reps 3
    .venv/bin/python -m bench.run_loop_lag --commit main --reps 3
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.harness import (
    add_source_arguments,
    import_vault,
    load_average,
    print_header,
    resolve_source,
    start_relay,
    table,
)
from bench.heavy import (
    HEAVY_FOLDER,
    MANY_SUGGESTIONS,
    Admin,
    marks_shown,
    setup_result,
    setup_script,
    write_notes,
)
from tests.e2e.liveserver import REPO_ROOT, LiveServer

LAG_RE = re.compile(
    r"event loop lagged (\d+) ms[^;\n]*"
    r"(?:; meanwhile the loop's thread ran (\d+) ms, other threads (\d+) ms)?"
)


def set_up(server: LiveServer) -> dict[str, Any]:
    """The set-up, run by the working tree's code whichever code the server runs: on `main` before issue
    23's bulk-decision work, 500 proposals in one process took over ten minutes (that process's follower
    parsed the note once per pending row after every proposal, quadratic in the rows)."""
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", setup_script()],
        cwd=REPO_ROOT,
        env=server.full_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return setup_result(result.stdout)


def lags_since(server: LiveServer, offset: int) -> list[tuple[int, str]]:
    """Each lag logged since `offset`, with the CPU the loop's thread and the others spent meanwhile (what
    tells work on the loop from a loop kept waiting)."""
    with server.log_path.open("rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    return [(int(lag), f"{loop} / {others}" if loop else "?") for lag, loop, others in LAG_RE.findall(text)]


async def measured(
    server: LiveServer, name: str, request: Callable[[], Awaitable[Any]], settle: float
) -> tuple[list[object], Any]:
    offset = server.log_path.stat().st_size
    started = time.perf_counter()
    try:
        answer = await request()
    except Exception as exc:  # a request that fails still stalled the loop meanwhile: reported, not lost
        answer = exc
    elapsed = time.perf_counter() - started
    await asyncio.sleep(settle)
    lags = lags_since(server, offset)
    worst, cpu = max(lags, default=(0, "-"))
    took = f"{elapsed:.2f} s" + (f" ({type(answer).__name__})" if isinstance(answer, Exception) else "")
    total = sum(lag for lag, _ in lags)
    return [name, took, worst, cpu, len(lags), total, load_average()], answer


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-looplag-"))
    source, description = resolve_source(args, work)
    vault = work / "vault"
    vault.mkdir()
    write_notes(vault)
    print_header("Event-loop lag of heavy admin requests (issue 23)", source=description)
    server = start_relay(work, source=source, LENSRELAY_LOOP_LAG_LOG_MS=str(args.log_ms))
    try:
        import_vault(server, vault, folder=HEAVY_FOLDER)
        started = time.perf_counter()
        ids = set_up(server)
        took = time.perf_counter() - started
        print(f"- set-up (500 suggestions proposed, a 50-edit multi_edit on 1 MB): {took:.1f} s\n")
        admin = await Admin.sign_in(server.http_url, timeout=args.timeout)
        await admin.review_page(ids["many"])  # warm: the renderer's first import
        rows: list[list[object]] = []
        for n in range(args.reps):
            row, page = await measured(
                server,
                f"review page, 1 MB note ({n + 1})",
                lambda: admin.review_page(ids["review"]),
                args.settle,
            )
            rows.append([*row, f"{marks_shown(page)} marks shown" if isinstance(page, str) else "failed"])
        for n in range(args.reps):
            row, page = await measured(
                server,
                f"version diff to now, 1 MB note ({n + 1})",
                lambda: admin.version_diff(ids["review_pk"], ids["version"]),
                args.settle,
            )
            changed = page.count("diff_sub") + page.count("diff_chg") if isinstance(page, str) else "failed"
            rows.append([*row, f"{changed} changed cells"])
        row, answer = await measured(
            server,
            f"Accept all, {MANY_SUGGESTIONS} suggestions",
            lambda: admin.accept_all(ids["many"]),
            args.settle,
        )
        decided = len(answer.get("decided", [])) if isinstance(answer, dict) else "failed"
        rows.append([*row, f"{decided} decided"])
        print(
            table(
                [
                    "request",
                    "answered in",
                    "max loop lag (ms)",
                    "its CPU: loop thread / other threads (ms)",
                    f"lags over {args.log_ms:g} ms",
                    "sum of lags (ms)",
                    "load average",
                    "check",
                ],
                rows,
            )
        )
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_source_arguments(parser)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--log-ms", type=float, default=10.0, help="the gauge's logging threshold")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a request may take")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds after each answer still counted")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
