"""A team's first minutes (issue 34): a fresh clone's first `./scripts/serve` until it serves (a new
`.venv`, pip, migrate, the demo vault), then restarts with nothing changed (goal ≤ 5 s), each until
`GET /ready` answers 200 and the demo token file exists; beside the peer, the reference y-websocket server
(`@y/websocket-server`, Node) from start until it accepts a connection.

    .venv/bin/python -m bench.run_serve --restarts 5

The clone is of this checkout's HEAD; pip reads its packages from pip's cache when they are there (a
first install on a new machine also downloads them).
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.liveserver import free_port, reference_server  # noqa: E402

LIMIT = 600.0


def _answers(port: int) -> bool:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        connection.request("GET", "/ready")
        return connection.getresponse().status == 200
    except OSError:
        return False


def serve_until_ready(clone: Path) -> tuple[float, str]:
    """Seconds from `./scripts/serve` until it serves; its output so far."""
    port = free_port()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LENSRELAY_", "DATABASE_URL", "VIRTUAL_ENV"))
    }
    env |= {"PORT": str(port)}
    log = clone / "serve.log"
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(clone / "scripts" / "serve")],
            cwd=clone,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        while not (_answers(port) and (clone / "data" / "demo-token").exists()):
            if process.poll() is not None or time.perf_counter() - started > LIMIT:
                raise SystemExit(f"./scripts/serve did not serve:\n{log.read_text()[-3000:]}")
            time.sleep(0.05)
        took = time.perf_counter() - started
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    return took, log.read_text()


def reference_until_listening(work: Path) -> float:
    server = reference_server(work)
    started = time.perf_counter()
    server.start()
    took = time.perf_counter() - started
    server.stop()
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--restarts", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    clone = work / "lens-relay"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    first, said = serve_until_ready(clone)
    assert "Installing Lens Relay" in said, said
    print(f"fresh clone -> serving: {first:.1f} s")
    for run in range(args.restarts):
        took, said = serve_until_ready(clone)
        assert "not running pip" in said, said
        peer = reference_until_listening(work / f"peer-{run}")
        print(f"restart {run + 1}: {took:.2f} s (reference y-websocket server: {peer:.2f} s)")


if __name__ == "__main__":
    main()
