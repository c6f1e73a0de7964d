"""Purged is gone, end to end: `manage.py purge_trash --yes` in its own process, an npm y-websocket client
connected to the note before the purge, and the HTTP routes a client would try afterwards.

The server learns of the purge only through the database (as every worker does): the connected client
is closed with 4404 "document purged", the edit it makes afterwards is stored nowhere, `POST /doc/new`
refuses the id (409), the versions and document routes answer 404 for every token, a new client is refused
with 4404, and a folder entry naming the purged uuid (in its own folder or another) is ignored.
"""

from __future__ import annotations

import asyncio
import json
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import YClientFactory
from .relay import Relay, TokenSpec, poll
from .yclient import YClient, utf16_len

pytestmark = pytest.mark.e2e

RELAY_ENV = {"LENSRELAY_COMPACT_AFTER_UPDATES": "1"}  # every edit is compacted, so it becomes a version
FOLDER, OTHER = "Doomed", "Elsewhere"
SECRET = "# Plan\n\nThe vault code is 4711.\n"
TIMEOUT = 10.0
_MARKER = "E2E-PURGE-ROWS "
_ROWS_SCRIPT = """
import json
from lensrelay.models import Document, PurgedDocument, YDoc, YSnapshot, YUpdate
from lensrelay.semantic.models import EmbeddedDocument
from lensrelay.history.models import DocVersion
from lensrelay.search.index import search_indexed
doc_id = {doc_id!r}
print({marker!r} + json.dumps({{
    "document": Document.objects.filter(doc_id=doc_id).count(),
    "ydoc": YDoc.objects.filter(doc_id=doc_id).count(),
    "log": YUpdate.objects.filter(doc_id=doc_id).count(),
    "snapshot": YSnapshot.objects.filter(doc_id=doc_id).count(),
    "versions": DocVersion.objects.filter(doc_id=doc_id).count(),
    "vectors": EmbeddedDocument.objects.filter(doc_id=doc_id).count(),
    "search": int(doc_id in search_indexed()),
    "tombstone": PurgedDocument.objects.filter(doc_id=doc_id).count(),
}}))
"""


@dataclass(frozen=True)
class Site:
    relay: Relay
    tokens: dict[str, str]
    folder_doc: str
    other_doc: str


@pytest.fixture(scope="module")
def site(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Site:
    root: Path = tmp_path_factory.mktemp("purge-vaults")
    for folder, files in ((FOLDER, {"Plan.md": SECRET, "Keep.md": "# Keep\n"}), (OTHER, {"There.md": "x\n"})):
        (root / folder).mkdir()
        for name, text in files.items():
            (root / folder / name).write_text(text, encoding="utf-8")
    made = relay.setup(
        imports=[(root / FOLDER, FOLDER), (root / OTHER, OTHER)],
        tokens={"other": TokenSpec("edit", (OTHER,)), "mine": TokenSpec("edit", (FOLDER,))},
    )
    tokens = {name: relay.tokens[name] for name in ("admin", "edit", "view")} | made
    folder_doc = asyncio.run(relay.folder_doc_id(tokens["edit"], folder=FOLDER))
    other_doc = asyncio.run(relay.folder_doc_id(tokens["edit"], folder=OTHER))
    return Site(relay, tokens, folder_doc, other_doc)


async def stored_rows(relay: Relay, doc_id: str) -> dict[str, int]:
    out = await asyncio.to_thread(
        relay.manage, "shell", "-c", _ROWS_SCRIPT.format(doc_id=doc_id, marker=_MARKER)
    )
    line = next(line for line in out.splitlines() if line.startswith(_MARKER))
    rows: dict[str, int] = json.loads(line[len(_MARKER) :])
    return rows


async def folder_client(site: Site, yclients: YClientFactory, doc: str, token: str, label: str) -> YClient:
    return await yclients(site.relay.doc_url(doc), doc, params={"token": token}, label=label)


async def test_a_purged_note_is_gone_for_its_live_client_and_for_every_route(
    site: Site, yclients: YClientFactory
) -> None:
    relay, tokens = site.relay, site.tokens
    doc_id = await relay.doc_id(tokens["edit"], folder=FOLDER, path="/Plan.md")
    uuid = doc_id[37:]
    writer = await yclients(relay.doc_url(doc_id), doc_id, params={"token": tokens["edit"]}, label="writer")
    await writer.insert(utf16_len(await writer.text()), "Second draft.\n")
    await poll(
        lambda: relay.get_json(f"/d/{doc_id}/versions", token=tokens["edit"]),
        lambda listed: len(listed) >= 1,
        timeout=TIMEOUT,
        what="a version of the plan",
    )
    before = await stored_rows(relay, doc_id)
    assert before["ydoc"] and before["versions"] and (before["log"] or before["snapshot"])

    # A client removes the entry; the server puts it in the trash; the operator purges the trash.
    plugin = await folder_client(site, yclients, site.folder_doc, tokens["edit"], "plugin")
    await plugin.transact(
        [
            {"op": "mapDelete", "name": "filemeta_v0", "key": "/Plan.md"},
            {"op": "mapDelete", "name": "docs", "key": "/Plan.md"},
        ]
    )
    await plugin.wait_map("filemeta_v0", "/_trash/Plan.md", timeout=TIMEOUT)
    await asyncio.sleep(0.05)
    out = await asyncio.to_thread(relay.command, "purge_trash", "--older-than", "0", "--yes")
    assert "Purged 1 entries" in out, out

    closed = await writer.wait_event("closed", timeout=TIMEOUT)
    assert (closed["code"], closed["reason"]) == (4404, "document purged")
    await writer.insert(0, "LATE ")  # the provider does not reconnect: this edit reaches no server

    # Every route a client might try now finds nothing, and nothing can bring the id back.
    for name in ("admin", "edit", "mine", "other", "view"):
        for path in (f"/d/{doc_id}/versions", f"/d/{doc_id}/versions/1", f"/d/{doc_id}/as-update"):
            answer = await relay.request("GET", path, token=tokens[name])
            assert answer.status_code == 404, (name, path, answer.text)
            assert "4711" not in answer.text
        update = await relay.request("POST", f"/d/{doc_id}/update", token=tokens[name], content=b"\x00\x00")
        assert update.status_code == 404, (name, update.text)
    for name in ("admin", "edit"):
        refused = await relay.request("POST", "/doc/new", token=tokens[name], json_body={"docId": doc_id})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"] == "this document id was purged and cannot be reused"
    for name in ("mine", "other", "view"):
        refused = await relay.request("POST", "/doc/new", token=tokens[name], json_body={"docId": doc_id})
        assert refused.status_code == 403
    assert (await relay.request("GET", f"/d/{doc_id}/as-update", token=tokens["admin"])).status_code == 404

    # A new client of any token is refused at once, with the reason.
    for name in ("edit", "other", "view"):
        late = await yclients(
            relay.doc_url(doc_id),
            doc_id,
            params={"token": tokens[name]},
            wait_synced=False,
            label=f"late-{name}",
        )
        event = await late.wait_event("closed", timeout=TIMEOUT)
        assert (event["code"], event["reason"]) == (4404, "document purged"), name

    # A folder entry naming the purged uuid is ignored, in its own folder and in another; a fresh entry
    # written in the same change is mirrored, so the mirror did run.
    stranger = await folder_client(site, yclients, site.other_doc, tokens["other"], "stranger")
    for client, folder, token in ((plugin, FOLDER, tokens["mine"]), (stranger, OTHER, tokens["other"])):
        fresh = str(uuidlib.uuid4())
        await client.transact(
            [
                {"op": "mapSet", "name": "filemeta_v0", "key": "/Back.md", "value": _entry(uuid)},
                {"op": "mapSet", "name": "filemeta_v0", "key": "/Fresh.md", "value": _entry(fresh)},
            ]
        )
        listed = await poll(
            lambda folder=folder, token=token: relay.document_paths(token, folder=folder),  # type: ignore[misc]
            lambda paths, folder=folder: f"{folder}/Fresh.md" in paths,  # type: ignore[misc]
            timeout=TIMEOUT,
            what=f"{folder}/Fresh.md mirrored",
        )
        assert f"{folder}/Back.md" not in listed and doc_id not in listed.values()

    after = await stored_rows(relay, doc_id)
    assert after == {
        "document": 0,
        "ydoc": 0,
        "log": 0,
        "snapshot": 0,
        "versions": 0,
        "vectors": 0,
        "search": 0,
        "tombstone": 1,
    }, after
    # The rest of the folder lives on.
    keep = await relay.doc_id(tokens["edit"], folder=FOLDER, path="/Keep.md")
    assert await relay.doc_text(keep, token=tokens["edit"]) == "# Keep\n"


def _entry(uuid: str) -> dict[str, Any]:
    return {"id": uuid, "type": "markdown", "version": 0}
