"""The backup drill, through a running server: while two npm y-websocket clients type into their notes and
the official MCP SDK assistant keeps suggesting edits, `manage.py backup` (a process of its own, as an
operator runs it) takes the archive; `manage.py restore` puts it into a new PostgreSQL database; a server
started on that copy serves every note's text as it was at the backup's point of the update log, every
suggestion and version made before it, the file blobs, and the tokens that worked before."""

from __future__ import annotations

import asyncio
import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.lensrelay.backups.test_backup import fresh_postgres, manage, state_there  # noqa: F401

from .conftest import YClientFactory
from .liveserver import lensrelay_server
from .relay import Relay

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

# The source keeps its whole update log, so the texts at the backup's point can be read back from it.
RELAY_ENV = {"LENSRELAY_COMPACT_AFTER_UPDATES": "1000000"}
FOLDER = "Drill"
TIMEOUT = 30.0
MARKER = "DRILL-STATE "
STEPS = 2000
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64


def _source_state(relay: Relay, *, upto: int | None) -> Any:
    script = (
        "import json; from tests.lensrelay.backups.test_backup import state, _as_json; "
        f"print({MARKER!r} + json.dumps(_as_json(state(upto={upto!r}))))"
    )
    [line] = [x for x in relay.manage("shell", "-c", script).splitlines() if x.startswith(MARKER)]
    return json.loads(line[len(MARKER) :])


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def _assistant(url: str, token: str, work: Any) -> Any:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client:
        return await work(client)


async def test_a_backup_taken_under_live_writers_restores_onto_postgresql_and_serves(
    relay: Relay,
    yclients: YClientFactory,
    tmp_path: Path,
    fresh_postgres: Any,  # noqa: F811
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Ana.md").write_text("# Ana\n\n", encoding="utf-8")
    (vault / "Ben.md").write_text("# Ben\n\n", encoding="utf-8")
    (vault / "Plan.md").write_text(
        "# Plan\n\n" + "".join(f"Step {n} is open.\n" for n in range(STEPS)), encoding="utf-8"
    )
    (vault / "diagram.png").write_bytes(PNG)
    relay.setup(imports=[(vault, FOLDER)])
    token = relay.tokens["edit"]
    paths = {
        path.removeprefix(f"{FOLDER}"): doc_id
        for path, doc_id in (await relay.document_paths(token, folder=FOLDER)).items()
    }
    typists = [
        await yclients(relay.doc_url(paths[p]), paths[p], params={"token": token}, label=p)
        for p in ("/Ana.md", "/Ben.md")
    ]

    writing = True

    async def type_on(client: Any) -> int:
        typed = 0
        while writing:
            text = await client.text()
            await client.insert(len(text.encode("utf-16-le")) // 2, f"{typed} ")
            typed += 1
            await asyncio.sleep(0.02)
        return typed

    async def suggest_on(client: Client) -> int:
        await client.call_tool("read", {"file_path": f"{FOLDER}/Plan.md"})
        made = 0
        while writing:
            result = await client.call_tool(
                "edit",
                {
                    "file_path": f"{FOLDER}/Plan.md",
                    "old_string": f"Step {made} is open.",
                    "new_string": f"Step {made} is done.",
                },
            )
            assert not result.is_error, _text(result)
            made += 1
            await asyncio.sleep(0.02)
        return made

    writers = [asyncio.create_task(type_on(c)) for c in typists]
    assistant = asyncio.create_task(_assistant(relay.http_url, relay.tokens["suggest"], suggest_on))
    await asyncio.sleep(1.0)
    archive = tmp_path / "drill.tar.gz"
    said = await asyncio.to_thread(relay.manage, "backup", str(archive))
    await asyncio.sleep(0.5)
    writing = False
    typed = await asyncio.gather(*writers)
    made = await assistant
    assert "Backed up" in said
    assert min(typed) > 20 and made > 3, (typed, made)

    with tarfile.open(archive) as tar:
        point = json.load(tar.extractfile("manifest.json"))["log_point"]  # type: ignore[arg-type]
    await asyncio.sleep(1.0)  # let the last rows settle on the source before reading it
    at_point = await asyncio.to_thread(_source_state, relay, upto=point)
    now = await asyncio.to_thread(_source_state, relay, upto=None)
    for path in ("/Ana.md", "/Ben.md"):
        # the typing went on after the point: the drill is not a quiet copy
        assert now["texts"][paths[path]] != at_point["texts"][paths[path]]
    assert at_point["files"], "the image's blob is part of the source"

    database = fresh_postgres()
    data = tmp_path / "restored"
    restored = await asyncio.to_thread(manage, "restore", str(archive), database=database, data=data)
    assert restored.returncode == 0, restored.stderr
    there = await asyncio.to_thread(state_there, database=database, data=data)

    assert there["texts"] == at_point["texts"]
    assert there["files"] == at_point["files"]
    for kept in ("users", "groups", "tokens"):
        assert there[kept] == now[kept]
    # Rows are the ones committed by the point: none invented, none changed, none of the earlier ones lost.
    source_suggestions = {row[0]: row for row in map(tuple, now["suggestions"])}
    restored_suggestions = [tuple(row) for row in there["suggestions"]]
    assert restored_suggestions and all(source_suggestions[row[0]] == row for row in restored_suggestions)
    assert 0 < len(restored_suggestions) < made  # the assistant went on suggesting after the point
    source_versions = {tuple(row) for row in now["versions"]}
    assert all(tuple(row) in source_versions for row in there["versions"])

    # A server on the restored copy serves it to the same clients with the same tokens.
    server = lensrelay_server(
        tmp_path / "on-postgres",
        DATABASE_URL=database,
        LENSRELAY_DATA_DIR=str(data),
        LENSRELAY_FILES_DIR=str(data / "files-root"),
    )
    await server.astart()
    try:
        back = Relay(server, relay.tokens)
        for path in ("/Ana.md", "/Ben.md"):
            reader = await yclients(
                back.doc_url(paths[path]), paths[path], params={"token": token}, label=f"{path} back"
            )
            assert await reader.text() == at_point["texts"][paths[path]]

        async def review(client: Client) -> tuple[str, str]:
            listed = _text(
                await client.call_tool("list_suggestions", {"path": f"{FOLDER}/Plan.md", "limit": 500})
            )
            read = _text(await client.call_tool("read", {"file_path": f"{FOLDER}/Plan.md"}))
            return listed, read

        listed, read = await _assistant(back.http_url, relay.tokens["suggest"], review)
        # the assistant finds every suggestion it made before the point, still pending, with its marks
        pending = len(restored_suggestions)
        assert listed.count("PENDING") == pending and listed.count("{--open--}{++done++}") == pending, listed
        assert read.count("{--open--}{++done++}") == pending, read
        # `read` shows the note as if accepted: the point falls between two of the assistant's edits
        assert f"Step {pending - 1} is done." in read and f"Step {pending} is open." in read
        picture = paths["/diagram.png"]
        image = await back.request(
            "GET", f"/f/{picture}/download", token=token, params={"hash": hashlib.sha256(PNG).hexdigest()}
        )
        assert image.status_code == 200 and image.content == PNG
    finally:
        await server.astop()
