"""The folder sync client's figures (issue 35), against our server on 127.0.0.1 with the real npm y-websocket
client as the other side:

- save on disk -> another client sees it: an editor-style save (temporary file renamed over the note) until
  the Node client's Y.Text holds the new line;
- server change -> file written: the Node client inserts a line until the file on disk holds it (polled
  every 2 ms);
- initial sync of a folder of N generated notes into an empty directory (`lensrelay-sync --once` would
  exit; the live client is timed until every file is on disk), and the client's RSS holding it.

    .venv/bin/python -m bench.run_folder_sync --edits 50 --notes 1000
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.harness import load_average, machine, rss_kib
from bench.run_editor import pct
from tests.e2e.relay import Relay, migrated_template, new_relay_server
from tests.e2e.syncclient import SyncProcess, editor_save, wait_file
from tests.e2e.yclient import YClient, utf16_len

FOLDER = "Bench"


def vault(path: Path, notes: int) -> None:
    path.mkdir(parents=True)
    (path / "Live.md").write_text("# Live\n\n", encoding="utf-8")
    for n in range(notes):
        sub = path / f"Area {n % 20}"
        sub.mkdir(exist_ok=True)
        body = "".join(f"Line {i} of note {n}: some words, [[Note {n + 1}]], café 😀.\n" for i in range(20))
        (sub / f"Note {n}.md").write_text(f"# Note {n}\n\n{body}", encoding="utf-8")


async def measure(relay: Relay, work: Path, *, edits: int, notes: int) -> dict[str, object]:
    token = relay.tokens["edit"]
    directory = work / "mirror"
    started = time.monotonic()
    sync = await SyncProcess.start(directory, url=relay.http_url, token=token, folder=FOLDER, extra=("-q",))
    try:
        last = (
            directory / f"Area {(notes - 1) % 20}" / f"Note {notes - 1}.md"
            if notes
            else directory / "Live.md"
        )
        while not last.exists() or len(list(directory.rglob("*.md"))) < notes + 1:
            if sync.process.returncode is not None or time.monotonic() - started > 600:
                raise SystemExit(f"the initial sync did not finish:\n{sync.said}")
            await asyncio.sleep(0.05)
        initial = time.monotonic() - started
        rss = rss_kib(sync.process.pid)
        doc_id = await relay.doc_id(token, folder=FOLDER, path="/Live.md")
        person = await YClient.start(relay.server.doc_server_url(doc_id), doc_id, params={"token": token})
        note = directory / "Live.md"
        up: list[float] = []
        down: list[float] = []
        try:
            for i in range(edits):
                text = note.read_text(encoding="utf-8")
                t0 = time.perf_counter()
                editor_save(note, text + f"disk {i}\n")
                await person.wait_text(contains=f"disk {i}\n", timeout=10)
                up.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(0.05)
                now = await person.text()
                await wait_file(note, lambda t, now=now: t == now, timeout=10)
                t0 = time.perf_counter()
                await person.insert(utf16_len(now), f"server {i}\n")
                while f"server {i}\n" not in note.read_text(encoding="utf-8"):
                    await asyncio.sleep(0.002)
                down.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(0.05)
        finally:
            await person.close()
    finally:
        await sync.stop()
    return {"up": up, "down": down, "initial": initial, "rss": rss}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--notes", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-folder-sync-") as raw:
        work = Path(raw)
        template = migrated_template(work / "template")
        server = new_relay_server(work / "relay", template=template)
        server.start()
        try:
            relay = Relay(server, template.tokens)
            vault(work / "vault", args.notes)
            relay.import_vault(work / "vault", folder=FOLDER)
            load_before = load_average()
            found = await measure(relay, work, edits=args.edits, notes=args.notes)
        finally:
            server.stop()
    up, down = found["up"], found["down"]
    assert isinstance(up, list) and isinstance(down, list)
    info = ", ".join(f"{key}: {value}" for key, value in machine().items())
    print("## lensrelay-sync (issue 35)\n")
    print(
        f"Machine: {info}. Load average before the client started: {load_before}, after: {load_average()}.\n"
    )
    print(f"`.venv/bin/python -m bench.run_folder_sync --edits {args.edits} --notes {args.notes}`\n")
    print("| measure | p50 | p99 | max |")
    print("|---|---|---|---|")
    for name, values in (
        ("save on disk -> Node client sees it (ms)", up),
        ("server change -> file (ms)", down),
    ):
        print(f"| {name} | {pct(values, 0.5):.1f} | {pct(values, 0.99):.1f} | {max(values):.1f} |")
    print(
        f"\nInitial sync of {args.notes + 1} notes into an empty directory: {found['initial']:.1f} s; "
        f"client RSS then {int(found['rss']) / 1024:.0f} MiB."
    )


if __name__ == "__main__":
    asyncio.run(main())
