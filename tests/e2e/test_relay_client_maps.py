"""The `users` and `frontmatter` maps Relay.md clients keep, through real y-websocket clients.

A Relay client registers its client id in `users` (Yjs's PermanentUserData) and mirrors the note's YAML
header into `frontmatter` (one entry per property, the value as JSON text). The server keeps both as
the clients wrote them, and when one of its own writers (here: an AI suggestion accepted by a reviewer)
changes the header it updates `frontmatter` in the same update, so no Relay client rewrites the old
values back into the text. A view token writes neither; an oversized entry is refused whole. The
sub-document query (message 7) on a folder document is answered (message 8) with the state vectors of
the named notes of that folder only.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import cbor2
import pytest

from lensrelay.protocol.wire import Reader, var_bytes, var_uint

from .conftest import YClientFactory
from .relay import Relay, RelayTokens
from .yclient import YClient

pytestmark = pytest.mark.e2e

MAX_FRAME_BYTES = 64 * 1024
RELAY_ENV = {"LENSRELAY_MAX_FRAME_BYTES": str(MAX_FRAME_BYTES)}
TIMEOUT = 10.0
NOTE = "---\ntitle: Old\ntags: [a, b]\n---\n# Body\n"
_MARKER = "E2E-FM "

_ACCEPT_SCRIPT = """
import json
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from lensrelay.docstore.persistence import stored_text
from lensrelay.docstore.store import store_session
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits

async def run():
    reviewer = await User.objects.acreate(username={reviewer!r}, is_staff=True, is_superuser=True)
    async with store_session() as store:
        index = path_index(store)
        await index.ensure()
        entry = index.entry_at({path!r})
        outcome = await suggestion_propose_edits(
            store=store, entry=entry, proposer=Proposer(author="claude"),
            specs=[EditSpec({old!r}, {new!r})], tool="edit",
        )
        decision = await suggestion_decide(
            store=store, suggestion=outcome.suggestion, user=reviewer, accept=True
        )
        text = await store.db(stored_text, entry.doc_id)
        return {{"ok": decision.ok, "reason": decision.reason, "text": text}}

print({marker!r} + json.dumps(async_to_sync(run)()))
"""


@pytest.fixture(scope="module")
def site(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> RelayTokens:
    vault: Path = tmp_path_factory.mktemp("meta")
    (vault / "Header.md").write_text(NOTE, encoding="utf-8")
    (vault / "Guarded.md").write_text(NOTE, encoding="utf-8")
    (vault / "Plain.md").write_text(NOTE, encoding="utf-8")
    (vault / "Binned.md").write_text(NOTE, encoding="utf-8")
    elsewhere: Path = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "Secret.md").write_text("# Secret\n", encoding="utf-8")
    relay.setup(imports=[(vault, "Meta"), (elsewhere, "Elsewhere")])
    return RelayTokens(relay=relay, tokens=relay.tokens)


def accept_edit(relay: Relay, *, path: str, old: str, new: str, reviewer: str) -> dict[str, object]:
    script = _ACCEPT_SCRIPT.format(path=path, old=old, new=new, reviewer=reviewer, marker=_MARKER)
    out = relay.manage("shell", "-c", script)
    line = next(line for line in out.splitlines() if line.startswith(_MARKER))
    result: dict[str, object] = json.loads(line[len(_MARKER) :])
    return result


async def test_an_accepted_header_edit_updates_the_frontmatter_map(
    site: RelayTokens, yclients: YClientFactory
) -> None:
    doc_id = await site.relay.doc_id(site.tokens["edit"], folder="Meta", path="/Header.md")
    url, params = site.relay.doc_url(doc_id), {"token": site.tokens["edit"]}
    relay_client = await yclients(url, doc_id, params=params, label="relay-style")
    # What a Relay client does on opening the note: its id in `users`, the header in `frontmatter`.
    client_id = await relay_client.register_user("user-1")
    await relay_client.transact(
        [
            {"op": "mapSet", "name": "frontmatter", "key": "title", "value": json.dumps("Old")},
            {
                "op": "mapSet",
                "name": "frontmatter",
                "key": "tags",
                "value": json.dumps(["a", "b"], separators=(",", ":")),
            },
        ]
    )
    other = await yclients(url, doc_id, params=params, label="other")
    await other.wait_map("frontmatter", "tags", value='["a","b"]', timeout=TIMEOUT)
    users = await other.wait_map("users", "user-1", timeout=TIMEOUT)
    assert users["user-1"]["ids"] == [client_id], users

    result = accept_edit(
        site.relay, path="Meta/Header.md", old="title: Old\ntags: [a, b]", new="title: New", reviewer="rita"
    )
    assert result["ok"], result
    assert result["text"] == "---\ntitle: New\n---\n# Body\n", result
    await relay_client.wait_text(equals="---\ntitle: New\n---\n# Body\n", timeout=TIMEOUT)
    await relay_client.wait_map("frontmatter", "title", value='"New"', timeout=TIMEOUT)
    await relay_client.wait_map("frontmatter", "tags", present=False, timeout=TIMEOUT)
    # the server's write left the users map as the client wrote it
    users = await relay_client.get_map("users")
    assert users["user-1"]["ids"] == [client_id], users


async def test_a_note_without_a_frontmatter_map_gets_none(
    site: RelayTokens, yclients: YClientFactory
) -> None:
    """A note no Relay client has mirrored is not given a map by the server's writers."""
    doc_id = await site.relay.doc_id(site.tokens["edit"], folder="Meta", path="/Plain.md")
    client = await yclients(site.relay.doc_url(doc_id), doc_id, params={"token": site.tokens["edit"]})
    result = accept_edit(
        site.relay, path="Meta/Plain.md", old="title: Old", new="title: Other", reviewer="paul"
    )
    assert result["ok"], result
    await client.wait_text(contains="title: Other", timeout=TIMEOUT)
    assert await client.get_map("frontmatter") == {}


async def test_a_view_token_writes_neither_map(site: RelayTokens, yclients: YClientFactory) -> None:
    doc_id = await site.relay.doc_id(site.tokens["edit"], folder="Meta", path="/Guarded.md")
    url = site.relay.doc_url(doc_id)
    viewer = await yclients(url, doc_id, params={"token": site.tokens["view"]}, label="viewer")
    mark = len(viewer.events)
    await viewer.register_user("intruder")
    await viewer.map_set("frontmatter", "title", json.dumps("Hacked"))
    denied = await viewer.wait_event("permission-denied", since=mark, timeout=TIMEOUT)
    assert "read-only" in denied["reason"], denied
    fresh = await yclients(url, doc_id, params={"token": site.tokens["edit"]}, label="fresh")
    assert await fresh.get_map("users") == {}
    assert await fresh.get_map("frontmatter") == {}


async def test_an_oversized_users_entry_is_refused_whole(site: RelayTokens, yclients: YClientFactory) -> None:
    doc_id = await site.relay.doc_id(site.tokens["edit"], folder="Meta", path="/Guarded.md")
    url, params = site.relay.doc_url(doc_id), {"token": site.tokens["edit"]}
    writer = await yclients(url, doc_id, params=params, label="big-writer")
    await writer.map_set("users", "x" * (2 * MAX_FRAME_BYTES), {"ids": [1]})
    closed = await writer.wait_event("closed", timeout=TIMEOUT)
    assert closed["code"] == 4413, closed
    fresh = await yclients(url, doc_id, params=params, label="after-big")
    assert await fresh.get_map("users") == {}


_TRASH_SCRIPT = """
from asgiref.sync import async_to_sync
from lensrelay.docstore.store import store_session
from lensrelay.vault.trash import documents_trash

async def run():
    async with store_session() as store:
        await documents_trash(store=store, doc_ids=[{doc_id!r}], force=True)

async_to_sync(run)()
print({marker!r} + "trashed")
"""


def query_subdocs(doc_ids: list[str]) -> bytes:
    """Message 7 as the Relay plugin frames it: a count, then each id as a string."""
    return var_uint(7) + var_uint(len(doc_ids)) + b"".join(var_bytes(d.encode()) for d in doc_ids)


async def subdoc_answer(client: YClient, frame: bytes) -> dict[str, bytes]:
    mark = len(client.events)
    await client.send_raw(frame)
    event = await client.wait_event(
        "message", since=mark, predicate=lambda e: e["type"] == 8, timeout=TIMEOUT
    )
    index: dict[str, bytes] = cbor2.loads(Reader(base64.b64decode(event["payload"])).var_bytes())
    return index


async def test_the_subdocument_query_answers_the_folders_notes(
    site: RelayTokens, yclients: YClientFactory
) -> None:
    token = site.tokens["edit"]
    folder_doc = await site.relay.folder_doc_id(token, folder="Meta")
    note_id = await site.relay.doc_id(token, folder="Meta", path="/Guarded.md")
    secret = await site.relay.doc_id(token, folder="Elsewhere", path="/Secret.md")
    folder_client = await yclients(site.relay.doc_url(folder_doc), folder_doc, params={"token": token})
    index = await subdoc_answer(folder_client, query_subdocs([note_id, secret, "no-such-doc", note_id]))
    assert list(index) == [note_id], index  # another folder's note and unknown ids are left out
    before = index[note_id]
    assert isinstance(before, bytes) and before, index

    writer = await yclients(site.relay.doc_url(note_id), note_id, params={"token": token}, label="writer")
    await writer.insert(0, "changed ")
    await writer.wait_synced()
    after = await subdoc_answer(folder_client, query_subdocs([note_id]))
    assert after[note_id] != before, (before, after)

    # the first form (no ids) and a note's own socket get an empty index; neither closes the socket
    assert await subdoc_answer(folder_client, b"\x07") == {}
    assert await subdoc_answer(writer, query_subdocs([note_id])) == {}
    assert folder_client.events_named("connection-close") == []


async def test_a_hostile_subdocument_query_closes_as_malformed(
    site: RelayTokens, yclients: YClientFactory
) -> None:
    token = site.tokens["edit"]
    folder_doc = await site.relay.folder_doc_id(token, folder="Meta")
    client = await yclients(site.relay.doc_url(folder_doc), folder_doc, params={"token": token})
    await client.send_raw(var_uint(7) + var_uint(10**6))
    closed = await client.wait_event("closed", timeout=TIMEOUT)
    assert closed["code"] == 4400 and "at most" in closed["reason"], closed


async def test_the_subdocument_query_leaves_trashed_and_purged_notes_out(
    site: RelayTokens, yclients: YClientFactory
) -> None:
    """Trashed notes are invisible to tokens everywhere else (the seventh finding of the third round)."""
    token = site.tokens["edit"]
    folder_doc = await site.relay.folder_doc_id(token, folder="Meta")
    kept = await site.relay.doc_id(token, folder="Meta", path="/Plain.md")
    binned = await site.relay.doc_id(token, folder="Meta", path="/Binned.md")
    folder_client = await yclients(site.relay.doc_url(folder_doc), folder_doc, params={"token": token})
    assert set(await subdoc_answer(folder_client, query_subdocs([kept, binned]))) == {kept, binned}
    out = site.relay.manage("shell", "-c", _TRASH_SCRIPT.format(doc_id=binned, marker=_MARKER))
    assert _MARKER + "trashed" in out, out
    for client in (
        folder_client,
        await yclients(site.relay.doc_url(folder_doc), folder_doc, params={"token": token}),
    ):
        assert list(await subdoc_answer(client, query_subdocs([binned, kept]))) == [kept]
    site.relay.command("purge_trash", "--older-than", "0", "--yes")
    assert list(await subdoc_answer(folder_client, query_subdocs([binned, kept]))) == [kept]
    assert folder_client.events_named("connection-close") == []
