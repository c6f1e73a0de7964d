"""Folder isolation against a running server, attacked with real clients and tokens of folder Public:

- the folder escape: a Public token puts `filemeta_v0["/stolen.md"] = {"id": <a Secret note's uuid>}` into
  the Public folder document, over HTTP (`POST /d/<folder doc>/update`) and over the WebSocket (the npm
  y-websocket provider);
- the backlinks leak: a Secret note linking into Public must leave no trace in Public's `backlinks_v0`;
- the existence oracle: another folder's document closes the socket exactly like an unknown id.

Each attack must fail and leave everything stored as it was.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pycrdt import Doc, Map

from .conftest import YClientFactory
from .relay import Relay, RelayTokens, TokenSpec, poll, read_map
from .test_mcp_tools_http import Session

pytestmark = pytest.mark.e2e

SECRET_WORD = "zebracorn"
PLAN = f"# Plan\n\nThe {SECRET_WORD} launch is on Friday.\n"
MIRROR_TIMEOUT = 15.0
PUBLIC_TOKENS = ("public-view", "public-edit")


World = RelayTokens


@pytest.fixture(scope="module")
def world(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> World:
    public: Path = tmp_path_factory.mktemp("public")
    (public / "Index.md").write_text("# Public index\n", encoding="utf-8")
    (public / "Linker.md").write_text("nothing yet\n", encoding="utf-8")
    secret: Path = tmp_path_factory.mktemp("secret")
    (secret / "Plan.md").write_text(PLAN, encoding="utf-8")
    (secret / "Spy.md").write_text("nothing yet\n", encoding="utf-8")
    created = relay.setup(
        imports=[(public, "Public"), (secret, "Secret")],
        tokens={
            "public-view": TokenSpec("view", ("Public",)),
            "public-edit": TokenSpec("edit", ("Public",)),
        },
    )
    return World(relay=relay, tokens={**relay.tokens, **created})


async def stored(world: World) -> dict[str, Any]:
    """What an administrator sees of Secret, and of Public's listing: the attacks must change none of it."""
    relay, admin = world.relay, world["admin"]
    plan = await relay.doc_id(admin, folder="Secret", path="/Plan.md")
    secret_folder = await relay.folder_doc_id(admin, folder="Secret")
    return {
        "secret documents": await relay.document_paths(admin, folder="Secret"),
        "plan": await relay.as_update(plan, token=admin),
        "secret filemeta": await relay.doc_map(secret_folder, token=admin, name="filemeta_v0"),
        "public documents": sorted(await relay.document_paths(admin, folder="Public")),
    }


async def assert_public_tokens_see_no_secret(world: World, *stolen_paths: str) -> None:
    relay = world.relay
    plan = await relay.doc_id(world["admin"], folder="Secret", path="/Plan.md")
    for name in PUBLIC_TOKENS:
        token = world[name]
        listed = await relay.document_paths(token, folder="Public")
        assert plan not in listed.values(), (name, listed)
        response = await relay.request("GET", f"/d/{plan}/as-update", token=token)
        assert response.status_code == 404, (name, response.status_code)
        mcp = Session(f"{relay.http_url}/mcp", token)
        await mcp.open()
        for path in stolen_paths:
            text, error = await mcp.call("read", {"file_path": path})
            assert error and "not found" in text.lower(), (name, path, text)
        assert await mcp.call("grep", {"pattern": SECRET_WORD}) == ("No matches found.", False)
        text, _ = await mcp.call("search", {"query": SECRET_WORD})
        assert text == f'No results for "{SECRET_WORD}".', (name, text)


async def mirrored(world: World, user_path: str) -> None:
    await poll(
        lambda: world.relay.document_paths(world["admin"], folder="Public"),
        lambda paths: user_path in paths,
        timeout=MIRROR_TIMEOUT,
        what=f"{user_path} mirrored",
    )


def entry(file_uuid: str) -> dict[str, Any]:
    return {"id": file_uuid, "type": "markdown", "version": 0}


def escape_update(base: bytes, *, stolen: str, plan_uuid: str, marker: str, marker_uuid: str) -> bytes:
    """A Yjs update, made with pycrdt against the folder doc's state, adding the stolen entry and a marker."""
    doc: Doc = Doc()
    doc.apply_update(base)
    state = doc.get_state()
    filemeta, docs = doc.get("filemeta_v0", type=Map), doc.get("docs", type=Map)
    with doc.transaction():
        filemeta[stolen], docs[stolen] = entry(plan_uuid), plan_uuid
        filemeta[marker], docs[marker] = entry(marker_uuid), marker_uuid
    return doc.get_update(state)


async def test_the_folder_escape_over_http_fails(world: World) -> None:
    relay = world.relay
    public_folder = await relay.folder_doc_id(world["admin"], folder="Public")
    plan = await relay.doc_id(world["admin"], folder="Secret", path="/Plan.md")
    before = await stored(world)
    for name, status in (("public-view", 403), ("public-edit", 200)):
        base = await relay.as_update(public_folder, token=world[name])
        stolen, marker = f"/stolen-http-{name}.md", f"/marker-http-{name}.md"
        update = escape_update(
            base, stolen=stolen, plan_uuid=plan[37:], marker=marker, marker_uuid=str(uuid.uuid4())
        )
        response = await relay.request(
            "POST", f"/d/{public_folder}/update", token=world[name], content=update
        )
        assert response.status_code == status, (name, response.text)
        if status == 200:
            # the marker, added in the same update, shows the mirror has run over the stolen entry too
            await mirrored(world, f"Public{marker}")
            before["public documents"] = sorted([*before["public documents"], f"Public{marker}"])
        assert await stored(world) == before, name
        await assert_public_tokens_see_no_secret(world, f"Public{stolen}")


async def test_the_folder_escape_over_the_websocket_fails(world: World, yclients: YClientFactory) -> None:
    relay = world.relay
    public_folder = await relay.folder_doc_id(world["admin"], folder="Public")
    plan_uuid = (await relay.doc_id(world["admin"], folder="Secret", path="/Plan.md"))[37:]
    before = await stored(world)
    for name in PUBLIC_TOKENS:
        client = await yclients(
            relay.doc_url(public_folder), public_folder, params={"token": world[name]}, label=name
        )
        stolen, marker = f"/stolen-ws-{name}.md", f"/marker-ws-{name}.md"
        marker_uuid = str(uuid.uuid4())
        await client.transact(
            [
                {"op": "mapSet", "name": "filemeta_v0", "key": stolen, "value": entry(plan_uuid)},
                {"op": "mapSet", "name": "docs", "key": stolen, "value": plan_uuid},
                {"op": "mapSet", "name": "filemeta_v0", "key": marker, "value": entry(marker_uuid)},
            ]
        )
        if name == "public-edit":
            await mirrored(world, f"Public{marker}")
            before["public documents"] = sorted([*before["public documents"], f"Public{marker}"])
        else:
            await client.wait_event("permission-denied")
            server_filemeta = await relay.doc_map(public_folder, token=world["admin"], name="filemeta_v0")
            assert stolen not in server_filemeta and marker not in server_filemeta
        assert await stored(world) == before, name
        await assert_public_tokens_see_no_secret(world, f"Public{stolen}")


async def test_backlinks_of_public_never_name_secret_notes(world: World, yclients: YClientFactory) -> None:
    relay, admin = world.relay, world["admin"]
    spy = await relay.doc_id(admin, folder="Secret", path="/Spy.md")
    linker = await relay.doc_id(admin, folder="Public", path="/Linker.md")
    index = await relay.doc_id(admin, folder="Public", path="/Index.md")
    public_folder = await relay.folder_doc_id(admin, folder="Public")
    secret_folder = await relay.folder_doc_id(admin, folder="Secret")
    secret_uuids = {d[37:] for d in (await relay.document_paths(admin, folder="Secret")).values()}
    writer = await yclients(relay.doc_url(spy), spy, params={"token": admin}, label="secret-writer")
    await writer.insert(0, "[[Public/Index]] [[Index]] [[/Index]] ")
    public_writer = await yclients(
        relay.doc_url(linker), linker, params={"token": admin}, label="public-writer"
    )
    await public_writer.insert(0, "[[Index]] ")

    async def backlinks(token: str) -> dict[str, Any]:
        return read_map(await relay.as_update(public_folder, token=token), "backlinks_v0")

    # the Public link shows up (the indexer ran after both edits), and nothing of Secret does
    for name in PUBLIC_TOKENS:
        seen = await poll(
            lambda name=name: backlinks(world[name]),  # type: ignore[misc]
            lambda found: linker[37:] in found.get(index[37:], []),
            timeout=MIRROR_TIMEOUT,
            what="Public backlink indexed",
        )
        named = set(seen) | {source for sources in seen.values() for source in sources}
        assert not named & secret_uuids, (name, seen)
    await writer.insert(0, "more ")  # a second edit of the Secret note, indexed again
    await public_writer.insert(0, "x ")
    await poll(lambda: backlinks(admin), lambda found: linker[37:] in found.get(index[37:], []))
    assert read_map(await relay.as_update(secret_folder, token=admin), "backlinks_v0") == {}
    seen = await backlinks(world["public-view"])
    assert not (set(seen) | {s for sources in seen.values() for s in sources}) & secret_uuids


async def test_another_folders_document_closes_like_an_unknown_one(
    world: World, yclients: YClientFactory
) -> None:
    relay = world.relay
    plan = await relay.doc_id(world["admin"], folder="Secret", path="/Plan.md")
    unknown = plan[:37] + str(uuid.uuid4())
    before = await stored(world)
    closes = []
    for name in PUBLIC_TOKENS:
        for doc_id in (plan, unknown):
            client = await yclients(
                relay.doc_url(doc_id), doc_id, params={"token": world[name]}, wait_synced=False, label=name
            )
            closed = await client.wait_event("connection-close")
            closes.append((closed["code"], closed["reason"]))
            assert (await client.wait_event("closed"))["code"] == 4404  # and y-websocket stops retrying
            assert await client.text() == ""
    # identical closes, reason included (the launcher forwards it; the unit test checks it too)
    assert len(set(closes)) == 1 and closes[0] == (4404, "unknown document"), closes
    # HTTP answers the same for both too
    for name in PUBLIC_TOKENS:
        answers = set()
        for doc_id in (plan, unknown):
            response = await relay.request("GET", f"/d/{doc_id}/as-update", token=world[name])
            answers.add((response.status_code, response.json()["error"].replace(doc_id, "<id>")))
        assert answers == {(404, "Document not found: <id>")}, answers
    assert await stored(world) == before
