"""Authors everywhere, with real clients: a y-websocket edit, an HTTP update, an MCP edit (the suggestion's
markup), an admin accept and an admin restore each name who did it in the update log and in
`GET /d/<id>/versions`, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pycrdt import Doc, Text

from tests.e2e.liveserver import LiveServer, lensrelay_server, run_manage
from tests.e2e.test_scaled import POSTGRES, fresh_database, require_services
from tests.e2e.yclient import utf16_len

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

PASSWORD = "authors-admin-pw"
CLIENT_NAME = "Claude Code"
SETUP = """
from django.contrib.auth.models import User
from django.core.management import call_command
from lensrelay.access.tokens import token_create
call_command("import_vault", {vault!r}, folder="Team")
User.objects.create_superuser("ada", "ada@example.org", {password!r})
token, raw = token_create(name="assistant", role="edit")
print("TOKEN", raw, token.pk)
"""
ENV = {
    # Versions once an edit burst is quiet for a moment; the log is not folded during the test.
    "LENSRELAY_VERSIONS_QUIET_SECONDS": "0.3",
    "LENSRELAY_COMPACT_AFTER_UPDATES": "100000",
}


@dataclass
class Site:
    server: LiveServer
    env: dict[str, str]
    token: str
    token_id: int
    backend: str

    def log_authors(self, doc_id: str) -> list[str]:
        sql = "SELECT author FROM lensrelay_yupdate WHERE doc_id = {} ORDER BY id"
        if self.backend == "sqlite":
            with sqlite3.connect(self.env["DATABASE_URL"].removeprefix("sqlite:///")) as conn:
                return [row[0] for row in conn.execute(sql.format("?"), (doc_id,))]
        with psycopg.connect(self.env["DATABASE_URL"]) as pg:
            return [row[0] for row in pg.execute(sql.format("%s"), (doc_id,)).fetchall()]

    def query_one(self, sql: str, *params: Any) -> Any:
        if self.backend == "sqlite":
            with sqlite3.connect(self.env["DATABASE_URL"].removeprefix("sqlite:///")) as conn:
                return conn.execute(sql, params).fetchone()
        with psycopg.connect(self.env["DATABASE_URL"]) as pg:
            return pg.execute(sql.replace("?", "%s"), params).fetchone()

    @property
    def token_label(self) -> str:
        return f"assistant (token #{self.token_id})"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def site(
    request: pytest.FixtureRequest, node_modules: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp(f"authors-{request.param}")
    vault = tmp / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("alpha beta gamma\n", encoding="utf-8")
    if request.param == "postgresql":
        require_services()
        with fresh_database() as name:
            yield from _site(tmp, vault, request.param, {"DATABASE_URL": f"{POSTGRES}/{name}"})
    else:
        yield from _site(tmp, vault, request.param, {})


def _site(tmp: Path, vault: Path, backend: str, extra: dict[str, str]) -> Iterator[Site]:
    server = lensrelay_server(tmp, **ENV, **extra)
    server.start()
    try:
        out = run_manage(server.env, "shell", "-c", SETUP.format(vault=str(vault), password=PASSWORD)).stdout
        raw, pk = out.split("TOKEN ", 1)[1].split()[:2]
        yield Site(server, dict(server.env), raw, int(pk), backend)
    finally:
        server.stop()


def doc_id_of(site: Site, path: str) -> str:
    headers = {"Authorization": f"Bearer {site.token}"}
    answer = httpx.get(f"{site.server.http_url}/api/documents", params={"path": path}, headers=headers)
    answer.raise_for_status()
    return str(answer.json()[0]["doc_id"])


async def versions(site: Site, doc_id: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {site.token}"}
    async with httpx.AsyncClient(base_url=site.server.http_url, headers=headers, timeout=30) as http:
        answer = await http.get(f"/d/{doc_id}/versions")
        answer.raise_for_status()
        listed: list[dict[str, Any]] = answer.json()
        return listed


async def newest_version_by(
    site: Site, doc_id: str, author: str, *, newer_than: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The newest version, once it is one whose changes are all `author`'s (and, with `newer_than`, cut
    after that version: the same author's earlier version does not count)."""
    for _ in range(300):
        listed = await versions(site, doc_id)
        fresh = newer_than is None or (listed and listed[0]["versionId"] != newer_than["versionId"])
        if fresh and listed and listed[0]["author"] == author:
            return listed[0]
        await asyncio.sleep(0.1)
    pytest.fail(f"no newest version by {author!r}: {[v['author'] for v in await versions(site, doc_id)]}")


class Admin:
    def __init__(self, server: LiveServer) -> None:
        self.http = httpx.Client(base_url=server.http_url, timeout=30)
        self.http.get("/admin/login/")
        response = self.post("/admin/login/", {"username": "ada", "password": PASSWORD, "next": "/admin/"})
        assert response.status_code == 302, response.text[:500]

    def post(self, path: str, data: dict[str, Any]) -> httpx.Response:
        return self.http.post(path, data={**data, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]})


async def test_every_write_path_names_its_author_in_the_log_and_in_versions(
    site: Site, yclients: Any
) -> None:
    doc_id = doc_id_of(site, "Team/Note.md")
    base = site.server.http_url
    assert set(site.log_authors(doc_id)) == {"manage.py import_vault (command)"}

    # A y-websocket edit: the socket's token.
    client = await yclients(site.server.doc_server_url(doc_id), doc_id, params={"token": site.token})
    await client.insert(utf16_len(await client.text()), "from the socket\n")
    by_socket = await newest_version_by(site, doc_id, site.token_label)
    assert site.log_authors(doc_id)[-1] == site.token_label

    # An HTTP update (POST /d/<id>/update): the bearer token.
    headers = {"Authorization": f"Bearer {site.token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as http:
        state = (await http.get(f"/d/{doc_id}/as-update")).content
        local: Doc[Any] = Doc()
        local.apply_update(state)
        before = local.get_state()
        text = local.get("contents", type=Text)
        text.insert(len(str(text)), "over http\n")
        answer = await http.post(f"/d/{doc_id}/update", content=local.get_update(before))
        assert answer.status_code == 200, answer.text
    await client.wait_text(contains="over http")
    # The socket's version has the same author: wait for the update's own, so it is not folded into the
    # next one.
    await newest_version_by(site, doc_id, site.token_label, newer_than=by_socket)
    assert site.log_authors(doc_id)[-1] == site.token_label

    # An MCP edit: the suggestion's markup is the assistant session's (its token's name and its
    # clientInfo name), and so are its row, its presence in the live document and its history.
    session_name = f"assistant · {CLIENT_NAME}"
    session_label = f"{session_name} (token #{site.token_id})"
    transport = httpx2.AsyncClient(headers=headers, timeout=30)
    async with transport:
        stream = streamable_http_client(f"{base}/mcp", http_client=transport)
        info = types.Implementation(name=CLIENT_NAME, version="1.0")
        async with Client(stream, mode="legacy", client_info=info) as mcp:
            assert not (await mcp.call_tool("read", {"file_path": "Team/Note.md"})).is_error
            edited = await mcp.call_tool(
                "edit", {"file_path": "Team/Note.md", "old_string": "beta", "new_string": "BETA"}
            )
            assert not edited.is_error, edited.content
            # The Node y-websocket client sees the assistant at work under the same name.
            states = await client.wait_awareness(2)
            shown = [state for state in states.values() if state.get("assistant")]
            assert [state["user"]["name"] for state in shown] == [session_name], states
    await client.wait_text(contains="BETA++}")
    assert f'"author":"{session_name}"' in await client.text()
    row = site.query_one(
        "SELECT author, client_name FROM suggestions_suggestion WHERE doc_id = ? AND status = 'pending'",
        doc_id,
    )
    assert row == (session_name, CLIENT_NAME)
    await newest_version_by(site, doc_id, session_label)
    assert site.log_authors(doc_id)[-1] == session_label

    # An admin accept: the staff reviewer.
    (pk,) = site.query_one(
        "SELECT id FROM suggestions_suggestion WHERE doc_id = ? AND status = 'pending'", doc_id
    )
    admin = await asyncio.to_thread(Admin, site.server)
    decided = await asyncio.to_thread(
        admin.post, f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "accept"}
    )
    assert decided.status_code == 302, decided.text[:500]
    await client.wait_text(contains="alpha BETA gamma")
    assert "{++" not in await client.text()
    await newest_version_by(site, doc_id, "ada (staff)")
    assert site.log_authors(doc_id)[-1] == "ada (staff)"

    # A restore of the imported version: the staff member who restored, naming the version.
    listed = await versions(site, doc_id)
    original = listed[-1]
    assert original["author"] == "manage.py import_vault (command)"
    (document_pk,) = site.query_one("SELECT id FROM lensrelay_document WHERE doc_id = ?", doc_id)
    restore = f"/admin/lensrelay/document/{document_pk}/versions/{original['versionId']}/restore/"
    done = await asyncio.to_thread(admin.post, restore, {"post": "yes"})
    assert done.status_code == 302, done.text[:500]
    await client.wait_text(equals="alpha beta gamma\n")
    restored_by = f"ada (staff) restored version {original['versionId']}"
    await newest_version_by(site, doc_id, restored_by)
    assert site.log_authors(doc_id)[-1] == restored_by
    # The admin's version page shows who, too.
    page = await asyncio.to_thread(admin.http.get, f"/admin/lensrelay/document/{document_pk}/versions/")
    for who in ("ada (staff)", session_label, site.token_label, "manage.py import_vault (command)"):
        assert who in page.text


async def test_a_client_name_cannot_forge_another_author(site: Site) -> None:
    """A hostile clientInfo name (commas, newlines, a fake principal) stays one bounded label of its own."""
    doc_id = doc_id_of(site, "Team/Note.md")
    headers = {"Authorization": f"Bearer {site.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as transport:
        stream = streamable_http_client(f"{site.server.http_url}/mcp", http_client=transport)
        info = types.Implementation(name="x, ada (staff)\nevil" + "z" * 500, version="1")
        async with Client(stream, mode="legacy", client_info=info) as mcp:
            assert not (await mcp.call_tool("read", {"file_path": "Team/Note.md"})).is_error
            edited = await mcp.call_tool(
                "edit", {"file_path": "Team/Note.md", "old_string": "gamma", "new_string": "GAMMA"}
            )
            assert not edited.is_error, edited.content
    for _ in range(100):
        last = site.log_authors(doc_id)[-1]
        if last.startswith("assistant · x"):
            break
        await asyncio.sleep(0.1)
    # Commas, the newline and the fake "(staff)" are gone; the client's part is 40 characters at most.
    assert last == "assistant · x ada staff evil" + "z" * 24 + f" (token #{site.token_id})"
    (author,) = site.query_one(
        "SELECT author FROM suggestions_suggestion WHERE doc_id = ? ORDER BY id DESC LIMIT 1", doc_id
    )
    assert author == "assistant · x ada staff evil" + "z" * 24
