"""The HTTP API (`/api/...`, the y-sweet document endpoints) and token checks on the sync socket."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from pycrdt import Doc, Text

from .conftest import YClientFactory
from .relay import Relay, RelayTokens, TokenSpec, read_text

pytestmark = pytest.mark.e2e

IDEAS = "# Ideas\n\n- one 💡\n"
README = "# Alpha\n"
PLAN = "# Beta plan\n\nSecret-ish.\n"
ALPHA_PATHS = {"Alpha/Notes/Ideas.md", "Alpha/Readme.md"}


Api = RelayTokens


@pytest.fixture(scope="module")
def api(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Api:
    alpha: Path = tmp_path_factory.mktemp("alpha")
    (alpha / "Notes").mkdir()
    (alpha / "Notes" / "Ideas.md").write_text(IDEAS, encoding="utf-8")
    (alpha / "Readme.md").write_text(README, encoding="utf-8")
    beta: Path = tmp_path_factory.mktemp("beta")
    (beta / "Plan.md").write_text(PLAN, encoding="utf-8")
    scoped = relay.setup(
        imports=[(alpha, "Alpha"), (beta, "Beta")],
        tokens={
            "alpha-edit": TokenSpec("edit", ("Alpha",)),
            "alpha-view": TokenSpec("view", ("Alpha",)),
            "minter": TokenSpec("edit", ("Alpha",)),
            "gone-revoked": TokenSpec("view"),
            "gone-expired": TokenSpec("view"),
        },
    )
    return Api(relay=relay, tokens={**relay.tokens, **scoped})


async def doc_id_of(api: Api, user_path: str) -> str:
    found = await api.relay.documents(api["edit"], path=user_path)
    assert len(found) == 1, found
    doc_id: str = found[0]["doc_id"]
    return doc_id


async def test_the_api_wants_a_valid_bearer_token(api: Api) -> None:
    relay = api.relay
    for path in ("/api/folders", "/api/documents"):
        for token in (None, "lr_not-a-real-token"):
            response = await relay.request("GET", path, token=token)
            assert response.status_code == 401, (path, token, response.text)
            assert response.headers.get("WWW-Authenticate", "").lower().startswith("bearer"), (
                f"GET {path} with token {token!r}: 401 without a Bearer WWW-Authenticate header "
                f"(headers: {dict(response.headers)})"
            )
        assert (await relay.request("GET", path, token=api["view"])).status_code == 200
    beta_plan = await doc_id_of(api, "Beta/Plan.md")
    response = await relay.request("GET", f"/d/{beta_plan}/as-update")
    assert response.status_code == 401 and response.headers.get("WWW-Authenticate", "").startswith("Bearer")


async def test_revoked_and_expired_tokens_stop_working_everywhere(api: Api, yclients: YClientFactory) -> None:
    relay = api.relay
    doc_id = await doc_id_of(api, "Alpha/Readme.md")
    url = relay.doc_url(doc_id)
    # both work first: the check is made on every use, nothing is cached
    for name in ("to-revoke", "to-expire"):
        assert (await relay.request("GET", "/api/folders", token=api[name])).status_code == 200
    user = await yclients(url, doc_id, params={"token": api["to-revoke"]}, label="before-revocation")
    assert await user.text() == README
    await user.close()

    await relay.adisable_tokens(revoke=[api["to-revoke"]], expire=[api["to-expire"]])
    for name in ("to-revoke", "to-expire"):
        response = await relay.request("GET", "/api/folders", token=api[name])
        assert response.status_code == 401, (name, response.text)
        client = await yclients(url, doc_id, params={"token": api[name]}, wait_synced=False, label=name)
        closed = await client.wait_event("closed")
        said = f"token {name.removeprefix('to-')}d"  # token revoked, token expired
        assert closed["code"] == 4401 and closed["reason"] == said, (name, closed)
        assert client.events_named("synced") == []


async def test_the_sync_socket_checks_tokens_and_folder_scope(api: Api, yclients: YClientFactory) -> None:
    relay = api.relay
    alpha_doc = await doc_id_of(api, "Alpha/Notes/Ideas.md")
    beta_doc = await doc_id_of(api, "Beta/Plan.md")
    before = await relay.as_update(beta_doc, token=api["edit"])
    bystander = await yclients(
        relay.doc_url(beta_doc), beta_doc, params={"token": api["edit"]}, label="bystander"
    )

    cases = {
        "no token": ({}, 4401),
        "empty token": ({"token": ""}, 4401),
        "unknown token": ({"token": "lr_" + "x" * 43}, 4401),
        "token of another folder": ({"token": api["alpha-edit"]}, 4404),
        "view token of another folder": ({"token": api["alpha-view"]}, 4404),
    }
    started = await asyncio.gather(
        *(
            yclients(relay.doc_url(beta_doc), beta_doc, params=params, wait_synced=False, label=what)
            for what, (params, _) in cases.items()
        )
    )
    clients = dict(zip(cases, started, strict=True))
    for what, client in clients.items():
        closed = await client.wait_event("closed")
        assert closed["code"] == cases[what][1], (what, closed)
        assert client.events_named("synced") == [], what
        assert (await client.info())["shouldConnect"] is False, what
        # a refused client never got to see the document
        assert await client.text() == "", what

    # the scoped token does sync its own folder
    scoped = await yclients(relay.doc_url(alpha_doc), alpha_doc, params={"token": api["alpha-edit"]})
    assert await scoped.text() == IDEAS
    # the document is unchanged and still served
    assert await relay.as_update(beta_doc, token=api["edit"]) == before
    await bystander.insert(0, "Still here. ")
    late = await yclients(relay.doc_url(beta_doc), beta_doc, params={"token": api["view"]}, label="late")
    assert await late.wait_text(equals="Still here. " + PLAN)


async def test_folders_and_documents_list_only_what_the_token_may_see(api: Api) -> None:
    relay = api.relay
    folders = {f["name"]: f for f in await relay.folders(api["view"])}
    assert {"Alpha", "Beta"} <= set(folders)
    documents = await relay.documents(api["view"])
    paths = {d["path"] for d in documents}
    assert ALPHA_PATHS | {"Beta/Plan.md"} <= paths
    for document in documents:
        assert document["folder"] == document["path"].split("/", 1)[0]
        assert document["ws_url"] == f"{relay.server.ws_url}/d/{document['doc_id']}/ws"
        # content doc ids share their folder doc's relay id
        assert document["doc_id"].startswith(folders[document["folder"]]["doc_id"][:36])
    alpha_count = len([d for d in documents if d["folder"] == "Alpha"])
    assert folders["Alpha"]["documents"] == alpha_count, (
        f"/api/folders counts {folders['Alpha']['documents']} documents in Alpha, "
        f"/api/documents lists {alpha_count}"
    )

    # filters: by folder, by folder + folder-relative path, by user-facing path
    assert {d["path"] for d in await relay.documents(api["view"], folder="Alpha")} == ALPHA_PATHS
    [ideas] = await relay.documents(api["view"], folder="Alpha", path="/Notes/Ideas.md")
    assert ideas["path"] == "Alpha/Notes/Ideas.md"
    assert await relay.documents(api["view"], path="Alpha/Notes/Ideas.md") == [ideas]
    assert await relay.documents(api["view"], folder="Alpha", path="/Nope.md") == []

    # a token limited to Alpha sees Alpha only, however it asks
    assert [f["name"] for f in await relay.folders(api["alpha-view"])] == ["Alpha"]
    assert {d["path"] for d in await relay.documents(api["alpha-view"])} == ALPHA_PATHS
    assert await relay.documents(api["alpha-view"], folder="Beta") == []
    assert await relay.documents(api["alpha-view"], path="Beta/Plan.md") == []
    beta_plan = await doc_id_of(api, "Beta/Plan.md")
    response = await relay.request("GET", f"/d/{beta_plan}/as-update", token=api["alpha-view"])
    assert response.status_code == 404
    alpha_doc = folders["Alpha"]["doc_id"]
    assert "/Notes/Ideas.md" in await relay.doc_map(alpha_doc, token=api["alpha-view"], name="filemeta_v0")


async def test_the_openapi_schema_and_readiness_are_served(api: Api) -> None:
    response = await api.relay.request("GET", "/api/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert {"/api/folders", "/api/documents"} <= set(schema["paths"])
    schemes = schema.get("components", {}).get("securitySchemes", {})
    assert any(s.get("scheme", "").lower() == "bearer" for s in schemes.values()), schemes
    ready = await api.relay.request("GET", "/ready")
    assert ready.status_code == 200 and ready.json()["ok"] is True


async def test_post_update_applies_edits_for_writers_only(api: Api, yclients: YClientFactory) -> None:
    relay = api.relay
    doc_id = await doc_id_of(api, "Alpha/Notes/Ideas.md")
    listener = await yclients(relay.doc_url(doc_id), doc_id, params={"token": api["view"]}, label="listener")
    before = await relay.as_update(doc_id, token=api["edit"])
    text = read_text(before)

    # an update made with pycrdt against the server's current state
    doc: Doc = Doc()
    doc.apply_update(before)
    state = doc.get_state()
    addition = "- two from HTTP ✨ 中文\n"
    ytext = doc.get("contents", type=Text)
    ytext.insert(len(str(ytext).encode("utf-8")), addition)  # pycrdt text offsets are UTF-8 bytes
    update = doc.get_update(state)
    assert str(ytext) == text + addition

    beta_doc = await doc_id_of(api, "Beta/Plan.md")
    refusals = [
        ("view token", doc_id, api["view"], update, 403),
        ("suggest token", doc_id, api["suggest"], update, 403),
        ("no token", doc_id, None, update, 401),
        ("garbage", doc_id, api["edit"], b"\xff\x00 not an update", 400),
        ("truncated update", doc_id, api["edit"], update[: len(update) // 2], 400),
        # a document outside the token's folders is reported as missing
        ("token of another folder", beta_doc, api["alpha-edit"], update, 404),
    ]
    beta_before = await relay.as_update(beta_doc, token=api["edit"])
    for what, target, token, body, status in refusals:
        response = await relay.request("POST", f"/d/{target}/update", token=token, content=body)
        assert response.status_code == status, (what, response.status_code, response.text)
        assert await relay.as_update(doc_id, token=api["edit"]) == before, f"{what}: the document changed"
    assert await relay.as_update(beta_doc, token=api["edit"]) == beta_before
    assert await listener.text() == text

    response = await relay.request("POST", f"/d/{doc_id}/update", token=api["edit"], content=update)
    assert response.status_code == 200, response.text
    assert await listener.wait_text(equals=text + addition) == text + addition
    assert await relay.doc_text(doc_id, token=api["view"]) == text + addition


async def test_doc_new_creates_a_document_clients_can_use(api: Api, yclients: YClientFactory) -> None:
    relay = api.relay
    response = await relay.request("POST", "/doc/new", token=api["edit"])
    assert response.status_code == 200, response.text
    doc_id = response.json()["docId"]
    assert doc_id
    empty = await relay.as_update(doc_id, token=api["edit"])
    assert read_text(empty) == ""

    writer = await yclients(relay.doc_url(doc_id), doc_id, params={"token": api["edit"]}, label="writer")
    await writer.insert(0, "A fresh doc 🌱")
    reader = await yclients(relay.doc_url(doc_id), doc_id, params={"token": api["view"]}, label="reader")
    assert await reader.wait_text(equals="A fresh doc 🌱")
    assert await relay.doc_text(doc_id, token=api["view"]) == "A fresh doc 🌱"

    # a caller-chosen id, then the refusals
    named = await relay.request("POST", "/doc/new", token=api["edit"], json_body={"docId": "my-doc_1.v2"})
    assert named.status_code == 200 and named.json() == {"docId": "my-doc_1.v2"}
    await yclients(relay.doc_url("my-doc_1.v2"), "my-doc_1.v2", params={"token": api["edit"]})
    assert (await relay.request("POST", "/doc/new", token=api["view"])).status_code == 403
    assert (await relay.request("POST", "/doc/new", token=api["alpha-edit"])).status_code == 403
    assert (await relay.request("POST", "/doc/new")).status_code == 401
    bad = await relay.request("POST", "/doc/new", token=api["edit"], json_body={"docId": "../escape"})
    assert bad.status_code == 400


async def test_401_bodies_say_why_the_token_was_refused(api: Api) -> None:
    relay = api.relay
    await relay.adisable_tokens(revoke=[api["gone-revoked"]], expire=[api["gone-expired"]])
    doc_id = await doc_id_of(api, "Alpha/Readme.md")
    headers = {
        "missing": {},
        "malformed": {"Authorization": "Basic dXNlcjpwYXNz"},
        "unknown": {"Authorization": "Bearer lr_not-a-real-token"},
        "expired": {"Authorization": f"Bearer {api['gone-expired']}"},
        "revoked": {"Authorization": f"Bearer {api['gone-revoked']}"},
    }
    routes = [
        ("GET", "/api/folders"), ("GET", f"/d/{doc_id}/as-update"), ("POST", "/doc/new"),
        ("POST", f"/doc/{doc_id}/auth"), ("GET", "/check_store"), ("GET", f"/f/{doc_id}/history"),
    ]  # fmt: skip
    async with httpx.AsyncClient(base_url=relay.http_url, timeout=10) as client:
        for method, path in routes:
            for reason, header in headers.items():
                response = await client.request(method, path, headers=header)
                assert response.status_code == 401, (method, path, reason, response.text)
                body = response.json()
                assert body["reason"] == reason and reason in body["error"].lower(), (path, body)


async def test_client_tokens_are_never_wider_than_their_minting_token(
    api: Api, yclients: YClientFactory
) -> None:
    relay = api.relay
    alpha, beta = await doc_id_of(api, "Alpha/Readme.md"), await doc_id_of(api, "Beta/Plan.md")
    before = await relay.as_update(alpha, token=api["edit"])

    async def auth(
        doc_id: str, token: str, body: object = None, content: bytes | None = None
    ) -> httpx.Response:
        return await relay.request(
            "POST",
            f"/doc/{doc_id}/auth",
            token=token,
            json_body=body if content is None else None,
            content=content,
        )

    # another folder's document is not there for a folder token; nor is an unknown one
    assert (await auth(beta, api["alpha-edit"], {})).status_code == 404
    assert (await auth("no-such-doc", api["edit"], {})).status_code == 404
    # a view token may read only: asked for "full" it is refused, by default it gets "read-only"
    refused = await auth(alpha, api["alpha-view"], {"authorization": "full"})
    assert refused.status_code == 403 and "read-only" in refused.json()["error"]
    reader = (await auth(alpha, api["alpha-view"], {})).json()
    assert reader["authorization"] == "read-only"
    # hostile bodies: a clear 400
    hostile: list[tuple[object, bytes | None]] = [
        ({"authorization": "root"}, None),
        ({"validForSeconds": -5}, None),
        ({"validForSeconds": True}, None),
        (None, b"{not json"),
        ([1, 2], None),
    ]
    for body, content in hostile:
        response = await auth(alpha, api["edit"], body, content)
        assert response.status_code == 400 and response.json()["error"], (body, content, response.text)

    full = (await auth(alpha, api["minter"], {"validForSeconds": 600})).json()
    assert full["authorization"] == "full" and full["docId"] == alpha
    assert full["url"] == f"{relay.http_url.replace('http://', 'ws://')}/d/{alpha}/ws"
    client_token = full["token"]
    # the client token opens its own document's /d/ routes, nothing else
    assert (await relay.request("GET", f"/d/{alpha}/as-update", token=client_token)).status_code == 200
    elsewhere = [
        ("GET", f"/d/{beta}/as-update"),
        ("GET", f"/doc/{alpha}/as-update"),
        ("GET", "/api/folders"),
        ("POST", "/doc/new"),
        ("POST", f"/doc/{alpha}/auth"),
    ]
    for method, path in elsewhere:
        response = await relay.request(method, path, token=client_token)
        assert response.status_code == 401, (method, path, response.text)
    assert (await relay.request("POST", "/mcp", token=client_token)).status_code == 401
    # read-only client tokens cannot write over HTTP; tampered ones are malformed; nothing changed
    doc = Doc()
    doc.get("contents", type=Text).insert(0, "nope")
    posted = await relay.request(
        "POST", f"/d/{alpha}/update", token=reader["token"], content=doc.get_update()
    )
    assert posted.status_code == 403
    tampered = client_token[:-4] + ("AAAA" if not client_token.endswith("AAAA") else "BBBB")
    response = await relay.request("GET", f"/d/{alpha}/as-update", token=tampered)
    assert response.status_code == 401 and response.json()["reason"] == "malformed"
    assert await relay.as_update(alpha, token=api["edit"]) == before

    # revoking the minting token ends its client tokens, open sockets included
    socket = await yclients(relay.doc_url(alpha), alpha, params={"token": client_token}, label="client-token")
    await relay.adisable_tokens(revoke=[api["minter"]])
    closed = await socket.wait_event("closed", timeout=10)
    assert closed["code"] == 4401 and closed["reason"], closed
    response = await relay.request("GET", f"/d/{alpha}/as-update", token=client_token)
    assert response.status_code == 401 and response.json()["reason"] == "revoked"
    late = await yclients(relay.doc_url(alpha), alpha, params={"token": client_token}, wait_synced=False)
    closed = await late.wait_event("closed", timeout=10)
    assert closed["code"] == 4401 and "revoked" in closed["reason"], closed


async def test_an_expired_client_token_is_refused_with_a_reason(api: Api, yclients: YClientFactory) -> None:
    relay = api.relay
    alpha = await doc_id_of(api, "Alpha/Readme.md")
    response = await relay.request(
        "POST", f"/doc/{alpha}/auth", token=api["edit"], json_body={"validForSeconds": 1}
    )
    client_token = response.json()["token"]
    await asyncio.sleep(1.5)
    response = await relay.request("GET", f"/d/{alpha}/as-update", token=client_token)
    assert response.status_code == 401 and response.json()["reason"] == "expired"
    client = await yclients(relay.doc_url(alpha), alpha, params={"token": client_token}, wait_synced=False)
    closed = await client.wait_event("closed", timeout=10)
    assert closed["code"] == 4401 and "expired" in closed["reason"], closed
