"""Assistants arriving at once (issue 36): ``--sessions`` new sessions of the official ``mcp`` SDK client each
make their first call, a ``read`` of one 140,000-character note, all at the same moment; then the same again
from the same sessions, warm. The time until every read has answered, per round: the first round carries
what a new session costs the server (the SDK lists the tools before its first call).

    .venv/bin/python -m bench.run_first_reads [--sessions 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench import harness
from bench.run_mcp_latency import SdkSession
from bench.run_storm import FOLDER, note_text


async def rounds(url: str, token: str, *, sessions: int, count: int) -> list[float]:
    clients = [SdkSession(f"{url}/mcp", token) for _ in range(sessions)]
    for client in clients:  # opened and closed in this task, as the SDK's task groups ask
        await client.open()
    took = []
    for _ in range(count):
        started = time.perf_counter()
        await asyncio.gather(*(c.call("read", {"file_path": f"{FOLDER}/Storm.md"}) for c in clients))
        took.append((time.perf_counter() - started) * 1000)
    for client in reversed(clients):
        await client.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-first-reads-") as raw:
        work = Path(raw)
        vault = work / "vault"
        vault.mkdir()
        (vault / "Storm.md").write_text(note_text(50), encoding="utf-8")
        server = harness.start_relay(work / "relay")
        try:
            harness.import_vault(server, vault, folder=FOLDER)
            token = harness.create_token(server, role="suggest")
            took = asyncio.run(rounds(server.http_url, token, sessions=args.sessions, count=args.rounds))
        finally:
            server.stop()
    print(
        f"{args.sessions} sessions, first read of a 140,000-character note at once: "
        + ", ".join(f"round {n + 1} {ms:.0f} ms" for n, ms in enumerate(took))
    )


if __name__ == "__main__":
    main()
