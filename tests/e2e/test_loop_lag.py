"""Heavy requests never stall the live path: while a corpus of heavy requests runs, a y-websocket writer
and reader on another document keep their delivery p99 under 100 ms and no socket closes.

One server for the module, with 10,000 generated notes (bench/vaultgen, imported in bulk) for grep and a
"Heavy" folder holding the notes the heavy requests work on. The probe is the benchmarks' Node load driver
(bench/node/load.mjs: real npm y-websocket clients that stop on any close), typing a timestamped marker
every few tens of milliseconds on its own document for the whole run; the heavy requests run meanwhile and
must succeed: through MCP (each on its own session) a 3 MB edit, a 100-edit multi_edit on a 5,000-line note
and a grep over the 10,000 notes; through the admin (a signed-in superuser, bench/heavy.py) the review page
of a 1 MB note with 500 tracked changes and the editor's Accept all of 500 suggestions on one note.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench import heavy as heavy_notes
from bench.vaultgen import generate

from .relay import Relay
from .yclient import node_executable

# Timings: run alone (scripts/test runs `serial` tests after the parallel pass), not beside other files.
pytestmark = [pytest.mark.e2e, pytest.mark.serial]

BENCH_NODE = Path(__file__).resolve().parents[2] / "bench" / "node"
RELAY_ENV = {"LENSRELAY_MCP_MAX_BODY_BYTES": str(16 * 1024 * 1024)}
VERSION = "2025-11-25"
TIMEOUT = 120.0
# Long enough for the heavy requests on a machine twice as slow as usual (they took over 22 s in one CI run).
PROBE_SECONDS = 45
PROBE_INTERVAL_MS = 40
P99_LIMIT_MS = 100.0
LONG_LINES = 5000


def filler(size: int) -> str:
    """Markdown of about ``size`` characters. No wikilinks: the backlinks of a 3 MB note are derived work,
    made incremental and moved off the live path apart (issue 23, the other half)."""
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "vault",
        "note",
        "link",
        "graph",
        "idea",
        "draft",
        "review",
        "café",
        "Zürich",
    ]
    lines, total, n = [], 0, 0
    while total < size:
        line = " ".join(words[(n + k) % len(words)] for k in range(12)) + f" note {n % 97}, line {n}."
        lines.append(line)
        total += len(line) + 1
        n += 1
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def corpus(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    notes = tmp_path_factory.mktemp("notes")
    generate(notes, notes=10_000, size=2000)
    heavy = tmp_path_factory.mktemp("heavy")
    (heavy / "Big.md").write_text("# Big\n\nThis note will grow: PLACEHOLDER is replaced.\n")
    (heavy / "Long.md").write_text(
        "".join(f"Line {n} of the long note, word{n} stays as it is.\n" for n in range(LONG_LINES))
    )
    (heavy / "Probe.md").write_text("")
    heavy_notes.write_notes(heavy)
    relay.setup(imports=[(notes, "Notes"), (heavy, heavy_notes.HEAVY_FOLDER)])
    # A superuser, and 500 suggestions proposed on one note through the suggestion service.
    ids = heavy_notes.setup_result(relay.manage("shell", "-c", heavy_notes.setup_script(version_edits=0)))
    probe_id = asyncio.run(relay.doc_id(relay.tokens["edit"], folder="Heavy", path="Probe.md"))
    return {"probe": probe_id, **ids}


class McpSession:
    """One MCP session over plain HTTP POSTs (handshake era)."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}",
        }
        self.next_id = 0

    async def post(self, body: dict[str, Any]) -> httpx.Response:
        async with httpx.AsyncClient(timeout=TIMEOUT, verify=False) as client:
            return await client.post(self.url, content=json.dumps(body).encode(), headers=self.headers)

    async def open(self) -> McpSession:
        params = {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "lag", "version": "1"},
        }
        response = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert response.status_code == 200, response.text
        self.headers |= {
            "Mcp-Session-Id": response.headers["Mcp-Session-Id"],
            "MCP-Protocol-Version": VERSION,
        }
        assert (await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
        return self

    async def call(self, name: str, **arguments: Any) -> str:
        """The tool's text; a tool error fails the test."""
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call"}
        response = await self.post(body | {"params": {"name": name, "arguments": arguments}})
        assert response.status_code == 200, response.text[:500]
        text = response.text
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            text = "\n".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
        result = json.loads(text)["result"]
        said = "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
        assert not result.get("isError"), said[:500]
        return said


async def big_edit(url: str, token: str) -> str:
    mcp = await McpSession(url, token).open()
    await mcp.call("read", file_path="Heavy/Big.md")
    return await mcp.call(
        "edit", file_path="Heavy/Big.md", old_string="PLACEHOLDER", new_string=filler(3 * 1024 * 1024)
    )


async def long_multi_edit(url: str, token: str) -> str:
    mcp = await McpSession(url, token).open()
    await mcp.call("read", file_path="Heavy/Long.md")
    edits = [
        {"old_string": f"word{n} stays", "new_string": f"word{n} changed"}
        for n in range(0, LONG_LINES, LONG_LINES // 100)
    ]
    return await mcp.call("multi_edit", file_path="Heavy/Long.md", edits=edits)


async def grep_everything(url: str, token: str) -> str:
    mcp = await McpSession(url, token).open()
    return await mcp.call("grep", pattern=r"alpha\s+\w+", path="Notes", output_mode="count")


async def probe(relay: Relay, doc_id: str, token: str, workdir: Path) -> dict[str, Any]:
    targets = workdir / "targets.json"
    target = {"room": doc_id, "serverUrls": [relay.server.doc_server_url(doc_id)], "params": {"token": token}}
    targets.write_text(json.dumps([target]))
    args = {
        "targetsFile": str(targets),
        "clientsPerDoc": 2,
        "seconds": PROBE_SECONDS,
        "intervalMs": PROBE_INTERVAL_MS,
    }
    process = await asyncio.create_subprocess_exec(
        node_executable(),
        str(BENCH_NODE / "load.mjs"),
        json.dumps(args),
        cwd=BENCH_NODE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), PROBE_SECONDS + 90)
    lines = [line for line in out.decode().splitlines() if line.startswith("{")]
    assert lines, err.decode()[-2000:]
    result: dict[str, Any] = json.loads(lines[-1])
    return result


async def test_heavy_requests_do_not_stall_another_documents_clients(
    relay: Relay, corpus: dict[str, Any], tmp_path: Path
) -> None:
    token, url = relay.tokens["edit"], f"{relay.http_url}/mcp"
    # A server that has served its vault once: the first read of 10,000 notes (texts loaded, views and
    # chunks built) is a cold start, not one of the heavy requests measured here.
    warm = await McpSession(url, token).open()
    await warm.call("grep", pattern="warm", path="Notes", output_mode="count")
    await warm.call("read", file_path="Heavy/Probe.md")
    admin = await heavy_notes.Admin.sign_in(relay.http_url)
    await admin.review_page(corpus["probe"])  # the review page's renderer is imported on first use
    probing = asyncio.create_task(probe(relay, corpus["probe"], token, tmp_path))
    await asyncio.sleep(3)  # the probe's clients are connected and typing
    edited, multi, counted, reviewed, decided = await asyncio.gather(
        big_edit(url, token),
        long_multi_edit(url, token),
        grep_everything(url, token),
        admin.review_page(corpus["review"]),
        admin.accept_all(corpus["many"]),
    )
    assert not probing.done(), "the heavy requests outlasted the probe: they were not all measured"
    measured = await probing

    assert "Edited Heavy/Big.md" in edited, edited
    assert "Heavy/Long.md" in multi, multi
    assert sum(int(n) for n in re.findall(r":(\d+)$", counted, re.MULTILINE)) > 1000, counted[:300]
    assert heavy_notes.marks_shown(reviewed) >= heavy_notes.REVIEW_MARKS, reviewed[-500:]
    assert decided["ok"] and len(decided["decided"]) == heavy_notes.MANY_SUGGESTIONS, str(decided)[:500]
    assert measured["errors"] == 0, measured  # no socket closed
    assert measured["delivered"] == measured["expected"] > 100, measured
    # On failure, the server's own loop-lag warnings say when (and the request log around them, what).
    log = [
        line
        for line in relay.server.log_path.read_text(errors="replace").splitlines()
        if "WARNING" in line or "POST /mcp" in line
    ]
    assert measured["p99"] < P99_LIMIT_MS, (measured, log[-60:])
    # What the edit wrote is there: the 3 MB note reads back through MCP.
    mcp = await McpSession(url, token).open()
    grown = await mcp.call("read", file_path="Heavy/Big.md", offset=1, limit=3)
    assert "This note will grow" in grown, grown
