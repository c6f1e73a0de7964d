"""The folder sync client's figures (issue 35), against our server on 127.0.0.1 with the real npm y-websocket
client as the other side:

- save on disk -> another client sees it: an editor-style save (temporary file renamed over the note) until
  the Node client's Y.Text holds the new line;
- server change -> file written: the Node client inserts a line until the file on disk holds it (polled
  every 2 ms);
- initial sync of a folder of N generated notes into an empty directory (`lensrelay-sync --once` would
  exit; the live client is timed until it says it is in sync), and the client's RSS holding it;
- attachments (`--files`, 1 MB of random bytes each): disk -> server-visible, from the file dropped in the
  directory (a temporary file renamed) until the Node client of the folder document holds the entry naming
  its hash (the bytes are stored before the entry is written); server -> disk, from the entry written by
  the Node client (after its upload through the file routes) until the file on disk holds the bytes.

    .venv/bin/python -m bench.run_folder_sync --edits 50 --notes 1000
    .venv/bin/python -m bench.run_folder_sync --edits 0 --notes 0 --files 10
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from bench.harness import load_average, machine, rss_kib
from bench.run_editor import pct
from tests.e2e.relay import Relay, bearer, migrated_template, new_relay_server
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


FILE_BYTES = 1024 * 1024


async def measure_files(relay: Relay, directory: Path, *, files: int) -> tuple[list[float], list[float]]:
    token = relay.tokens["edit"]
    folder_doc = await relay.folder_doc_id(token, folder=FOLDER)
    plugin = await YClient.start(relay.server.doc_server_url(folder_doc), folder_doc, params={"token": token})
    up: list[float] = []
    down: list[float] = []
    try:
        async with httpx.AsyncClient(base_url=relay.http_url, timeout=30) as http:
            for i in range(files):
                data = os.urandom(FILE_BYTES)
                digest = hashlib.sha256(data).hexdigest()
                temp = directory / f".drop-{i}.tmp"
                temp.write_bytes(data)
                t0 = time.perf_counter()
                os.replace(temp, directory / f"Up {i}.bin")
                await plugin.wait_map("filemeta_v0", f"/Up {i}.bin", timeout=30)
                while (await plugin.get_map("filemeta_v0"))[f"/Up {i}.bin"].get("hash") != digest:
                    await asyncio.sleep(0.005)
                up.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(0.1)

                data = os.urandom(FILE_BYTES)
                digest = hashlib.sha256(data).hexdigest()
                file_uuid = str(uuid.uuid4())
                doc_id = f"{folder_doc[:36]}-{file_uuid}"
                answer = await http.post(
                    f"/f/{doc_id}/upload-url", params={"hash": digest}, headers=bearer(token)
                )
                put = await http.put(answer.json()["uploadUrl"], content=data)
                assert put.status_code == 200, put.text
                meta = {
                    "id": file_uuid,
                    "type": "file",
                    "version": 0,
                    "hash": digest,
                    "mimetype": "application/octet-stream",
                    "synctime": int(time.time() * 1000),
                }
                target = directory / f"Down {i}.bin"
                t0 = time.perf_counter()
                await plugin.transact(
                    [
                        {"op": "mapSet", "name": "filemeta_v0", "key": f"/Down {i}.bin", "value": meta},
                        {"op": "mapSet", "name": "docs", "key": f"/Down {i}.bin", "value": file_uuid},
                    ]
                )
                while not (target.exists() and target.stat().st_size == FILE_BYTES):
                    await asyncio.sleep(0.002)
                down.append((time.perf_counter() - t0) * 1000)
                assert target.read_bytes() == data
                await asyncio.sleep(0.1)
    finally:
        await plugin.close()
    return up, down


def pause() -> float:
    """50-100 ms between edits, drawn: a fixed pause falls into step with the client's 50 ms looks at the
    notes changed lately, and every edit would then be timed at the same point of that cycle."""
    return 0.05 + random.random() * 0.05


async def measure(relay: Relay, work: Path, *, edits: int, notes: int, files: int) -> dict[str, object]:
    token = relay.tokens["edit"]
    directory = work / "mirror"
    started = time.monotonic()
    sync = await SyncProcess.start(directory, url=relay.http_url, token=token, folder=FOLDER)
    try:
        # Until the client says it is in sync: every note written and its state saved, not only the last
        # file there (the edits timed next would otherwise meet the initial sync's tail).
        await sync.wait_said("in sync:", timeout=600)
        if len(list(directory.rglob("*.md"))) < notes + 1:
            raise SystemExit(f"in sync, but not every note is a file:\n{sync.said}")
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
                await asyncio.sleep(pause())
                now = await person.text()
                await wait_file(note, lambda t, now=now: t == now, timeout=10)
                t0 = time.perf_counter()
                await person.insert(utf16_len(now), f"server {i}\n")
                while f"server {i}\n" not in note.read_text(encoding="utf-8"):
                    await asyncio.sleep(0.002)
                down.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(pause())
        finally:
            await person.close()
        files_up, files_down = await measure_files(relay, directory, files=files)
    finally:
        await sync.stop()
    return {
        "up": up,
        "down": down,
        "initial": initial,
        "rss": rss,
        "files_up": files_up,
        "files_down": files_down,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--files", type=int, default=0, help="1 MB attachments each way")
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
            found = await measure(relay, work, edits=args.edits, notes=args.notes, files=args.files)
        finally:
            server.stop()
    up, down, files_up, files_down = found["up"], found["down"], found["files_up"], found["files_down"]
    assert isinstance(up, list) and isinstance(down, list)
    assert isinstance(files_up, list) and isinstance(files_down, list)
    info = ", ".join(f"{key}: {value}" for key, value in machine().items())
    print("## lensrelay-sync (issue 35)\n")
    print(
        f"Machine: {info}. Load average before the client started: {load_before}, after: {load_average()}.\n"
    )
    print(
        f"`.venv/bin/python -m bench.run_folder_sync --edits {args.edits} --notes {args.notes} "
        f"--files {args.files}`\n"
    )
    # Which one was slowest (1 = the first, right after the initial sync): a warm-up or a steady cost.
    print("| measure | p50 | p99 | max | slowest | max from the second on |")
    print("|---|---|---|---|---|---|")
    for name, values in (
        ("save on disk -> Node client sees it (ms)", up),
        ("server change -> file (ms)", down),
        ("1 MB attachment: disk -> entry with its hash seen by a Node client (ms)", files_up),
        ("1 MB attachment: entry written on the server -> file on disk (ms)", files_down),
    ):
        if not values:
            continue
        slowest = values.index(max(values)) + 1
        print(
            f"| {name} | {pct(values, 0.5):.1f} | {pct(values, 0.99):.1f} | {max(values):.1f} "
            f"| {slowest} of {len(values)} | {max(values[1:] or values):.1f} |"
        )
    print(
        f"\nInitial sync of {args.notes + 1} notes into an empty directory: {found['initial']:.1f} s; "
        f"client RSS then {int(found['rss']) / 1024:.0f} MiB."
    )


if __name__ == "__main__":
    asyncio.run(main())
