"""The scaled-out shape: daphne workers on one PostgreSQL database and a redis-server of their own.

Real clients throughout: npm y-websocket providers, the official MCP SDK client, the Django admin over
HTTP, `manage.py import_vault` in its own process. Each worker keeps in-memory views (paths, texts,
links, search); every write path, on any worker or in any process, must reach all of them.

Three clusters of two workers: a plain one; one whose channel layer drops a third of its messages while
one worker polls the log slowly and compaction runs every few updates; one whose Redis and PostgreSQL
(behind a TCP proxy) the tests cut and restore.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import psycopg
import pytest
import redis
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.liveserver import LiveServer, lensrelay_server, run_manage
from tests.e2e.outages import TcpProxy, private_redis
from tests.e2e.yclient import utf16_len

pytestmark = [
    pytest.mark.scaled,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

POSTGRES = os.environ.get("LENSRELAY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
REDIS = os.environ.get("LENSRELAY_TEST_REDIS", "redis://127.0.0.1:6379")
ADMIN_PASSWORD = "scaled-admin-pw"

SETUP = """
from django.contrib.auth.models import User
from django.core.management import call_command
from lensrelay.access.tokens import token_create
call_command("import_vault", {vault!r}, folder="Team")
User.objects.create_superuser("ada", "ada@example.org", {password!r})
print("TOKEN " + token_create(name="scaled", role="edit")[1])
"""


def require_services() -> None:
    """These tests need the services; without them they fail, never skip, so CI can't go green blind."""
    try:
        psycopg.connect(f"{POSTGRES}/postgres", connect_timeout=3).close()
    except psycopg.Error as exc:
        pytest.fail(f"PostgreSQL is required for the scaled-out tests ({POSTGRES}): {exc}")
    try:
        redis.Redis.from_url(REDIS, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        pytest.fail(f"Redis is required for the scaled-out tests ({REDIS}): {exc}")


@contextmanager
def fresh_database() -> Iterator[str]:
    name = f"lensrelay_scaled_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Cluster:
    workers: list[LiveServer]
    token: str
    database: str  # a direct URL, for the tests' own look-ups
    redis: LiveServer

    @property
    def a(self) -> LiveServer:
        return self.workers[0]

    @property
    def b(self) -> LiveServer:
        return self.workers[1]

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database) as conn:
            return list(conn.execute(sql, params).fetchall())

    def doc_id(self, path: str, server: LiveServer | None = None) -> str:
        [document] = api_documents(server or self.a, self.token, path)
        return str(document["doc_id"])

    def folder_doc_id(self, name: str) -> str:
        [(doc_id,)] = self.query("SELECT doc_id FROM lensrelay_folder WHERE name = %s", name)
        return str(doc_id)


@contextmanager
def cluster(
    tmp: pytest.TempPathFactory,
    *,
    shared: dict[str, str],
    each: list[dict[str, str]],
    via_proxy: bool = False,
) -> Iterator[tuple[Cluster, TcpProxy | None]]:
    require_services()
    cache = private_redis(tmp.mktemp("redis"))
    cache.start()
    proxy = TcpProxy("127.0.0.1", int(POSTGRES.rsplit(":", 1)[1])) if via_proxy else None
    workers: list[LiveServer] = []
    try:
        with fresh_database() as name:
            host = f"postgresql://postgres@127.0.0.1:{proxy.port}" if proxy else POSTGRES
            env = {
                "DATABASE_URL": f"{host}/{name}",
                "REDIS_URL": f"redis://127.0.0.1:{cache.port}/0",
                **shared,
            }
            try:
                for n, extra in enumerate(each):
                    worker = lensrelay_server(tmp.mktemp(f"worker{n}"), **env, **extra)
                    if n:
                        worker.setup = []  # one migration for the shared database
                    workers.append(worker)
                workers[0].start()
                for worker in workers[1:]:
                    worker.start()
                vault = tmp.mktemp("vault")
                (vault / "Shared.md").write_text("Written once, read by two workers.\n")
                (vault / "Doomed.md").write_text("This note will be deleted in the admin.\n")
                (vault / "Busy.md").write_text("base\n")
                (vault / "Grouped.md").write_text("kept to one worker\n")
                script = SETUP.format(vault=str(vault), password=ADMIN_PASSWORD)
                token = run_manage(env, "shell", "-c", script).stdout.split("TOKEN ", 1)[1].split()[0]
                yield Cluster(workers, token, f"{POSTGRES}/{name}", cache), proxy
                for worker in workers:
                    assert "Task exception was never retrieved" not in worker.log_path.read_text(
                        errors="replace"
                    )
            finally:
                for worker in workers:
                    worker.kill()  # nothing to flush: every change was logged before anyone saw it
    finally:
        if proxy is not None:
            proxy.close()
        cache.stop()


# -- clients ----


def api_documents(server: LiveServer, token: str, path: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"}
    response = httpx.get(f"{server.http_url}/api/documents", params={"path": path}, headers=headers)
    response.raise_for_status()
    return list(response.json())


class Admin:
    """A staff member signed in to one worker's Django admin."""

    def __init__(self, server: LiveServer) -> None:
        self.http = httpx.Client(base_url=server.http_url, timeout=30)
        self.http.get("/admin/login/")
        response = self.post(
            "/admin/login/", {"username": "ada", "password": ADMIN_PASSWORD, "next": "/admin/"}
        )
        assert response.status_code == 302, response.text[:500]

    def post(self, path: str, data: dict[str, Any]) -> httpx.Response:
        return self.http.post(path, data={**data, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]})


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next worker in turn, as a load balancer without affinity does."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.used: list[int] = []
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[len(self.used) % len(self.ports)]
        self.used.append(port)
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def mcp(cluster: Cluster, *servers: LiveServer) -> AsyncIterator[tuple[Client, RoundRobin]]:
    transport = RoundRobin([server.port for server in servers])
    headers = {"Authorization": f"Bearer {cluster.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30, transport=transport) as http:
        stream = streamable_http_client(f"{servers[0].http_url}/mcp", http_client=http)
        async with Client(stream, mode="legacy") as client:
            yield client, transport


async def tool(client: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    result = await client.call_tool(name, arguments)
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    return not result.is_error, text


async def within(seconds: float, check: Callable[[], Any], what: str) -> float:
    """Poll an async check until it returns true; returns how long it took, fails after `seconds`."""
    start = time.monotonic()
    while True:
        if await check():
            return time.monotonic() - start
        if time.monotonic() - start > seconds:
            pytest.fail(f"{what}: not within {seconds} s")
        await asyncio.sleep(0.05)


async def one_on_each(cluster: Cluster, yclients: Any, path: str) -> tuple[str, Any, Any]:
    """A synced y-websocket client of the document on worker A, and one on worker B."""
    doc_id = cluster.doc_id(path)
    on_a = await yclients(cluster.a.doc_server_url(doc_id), doc_id, params={"token": cluster.token})
    on_b = await yclients(cluster.b.doc_server_url(doc_id), doc_id, params={"token": cluster.token})
    return doc_id, on_a, on_b


def closes(*clients: Any) -> int:
    return sum(len(client.events_named("connection-close")) for client in clients)


# -- one plain cluster ----


@pytest.fixture(scope="module")
def plain(node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory, shared={}, each=[{}, {}]) as (live, _):
        yield live


async def test_clients_on_different_workers_converge(plain: Cluster, yclients: Any) -> None:
    doc_id, alice, bob = await one_on_each(plain, yclients, "Team/Shared.md")
    assert plain.doc_id("Team/Shared.md", plain.b) == doc_id
    assert await bob.text() == "Written once, read by two workers.\n"
    await alice.insert(0, "Alice 👋 ")
    await bob.wait_text(equals="Alice 👋 Written once, read by two workers.\n", timeout=5)
    await bob.insert(utf16_len("Alice 👋 Written once"), " (日本語 by Bob)")
    expected = "Alice 👋 Written once (日本語 by Bob), read by two workers.\n"
    await alice.wait_text(equals=expected, timeout=5)
    # Idle sockets stay open: redis-py's 5 s socket timeout once killed them every ~6 s.
    await asyncio.sleep(7)
    await alice.insert(0, "still here ")
    await bob.wait_text(contains="still here Alice", timeout=5)
    assert closes(alice, bob) == 0


async def test_a_document_only_one_worker_holds_sends_nothing_over_redis(
    plain: Cluster, yclients: Any
) -> None:
    """Clients grouped by document (docs/scale.md's advice): while no other worker holds a document, its
    updates are published to no one; a worker that loads it later has everything and hears what follows."""
    doc_id = plain.doc_id("Team/Grouped.md")
    params = {"token": plain.token}
    writer = await yclients(plain.a.doc_server_url(doc_id), doc_id, params=params)
    reader = await yclients(plain.a.doc_server_url(doc_id), doc_id, params=params)
    stats = redis.Redis(host="127.0.0.1", port=plain.redis.port)

    def published() -> int:
        return int(stats.info("commandstats").get("cmdstat_publish", {}).get("calls", 0))

    started, before = time.monotonic(), published()
    for n in range(20):
        await writer.insert(0, f"<{n}>")
        await reader.wait_text(contains=f"<{n}>", timeout=5)
    # All that went out: each worker's announcement of its holdings every 2 s (up to 200 documents a
    # message) and a little slack, far from one message per edit (the code before this made 20).
    announcements = 2 * (int((time.monotonic() - started) / 2) + 1) + 2
    assert published() - before <= announcements < 20

    late = await yclients(plain.b.doc_server_url(doc_id), doc_id, params=params)
    assert (await late.text()).startswith("<19><18>")
    await writer.insert(0, "<now>")
    await late.wait_text(contains="<now><19>", timeout=5)
    await late.insert(0, "<from b>")
    await reader.wait_text(contains="<from b><now>", timeout=5)


async def test_presence_reaches_clients_on_the_other_worker(plain: Cluster, yclients: Any) -> None:
    doc_id = plain.doc_id("Team/Shared.md")
    alice = await yclients(
        plain.a.doc_server_url(doc_id), doc_id, params={"token": plain.token}, awareness={"user": "alice"}
    )
    bob = await yclients(
        plain.b.doc_server_url(doc_id), doc_id, params={"token": plain.token}, awareness={"user": "bob"}
    )
    await bob.set_awareness({"user": "bob", "cursor": 3})

    async def seen(client: Any, state: dict[str, Any]) -> bool:
        return state in (await client.awareness_states()).values()

    await within(5.0, lambda: seen(alice, {"user": "bob", "cursor": 3}), "bob's cursor on worker A")
    await alice.set_awareness({"user": "alice", "cursor": 1})
    await within(5.0, lambda: seen(bob, {"user": "alice", "cursor": 1}), "alice's cursor on worker B")

    # a renewal of unchanged presence travels in its room's batch, across workers too
    clocks, _ = await bob.awareness_clocks()
    await alice.renew_awareness()

    async def renewed() -> bool:
        return (await bob.awareness_clocks())[0][alice.client_id] > clocks[alice.client_id]

    await within(5.0, renewed, "alice's renewal on worker B")


async def test_a_folder_imported_by_a_separate_process_is_visible_on_both_workers(
    plain: Cluster, tmp_path: Path
) -> None:
    (tmp_path / "Deep").mkdir()
    (tmp_path / "Deep" / "Fresh.md").write_text("freshly imported ✨ needle\n")
    async with mcp(plain, plain.a) as (on_a, _), mcp(plain, plain.b) as (on_b, _):
        for client in (on_a, on_b):  # both workers have loaded their views before the import
            assert "Imported" not in (await tool(client, "info", {}))[1]
        env = {"DATABASE_URL": plain.database, "REDIS_URL": f"redis://127.0.0.1:{plain.redis.port}/0"}
        await asyncio.to_thread(run_manage, env, "import_vault", str(tmp_path), "--folder", "Imported")
        for client in (on_a, on_b):

            async def visible(client: Client = client) -> bool:
                found, text = await tool(client, "glob", {"pattern": "**/*.md", "path": "Imported"})
                return found and text.strip() == "Imported/Deep/Fresh.md"

            await within(2.0, visible, "an imported folder through MCP glob")
            ok, text = await tool(client, "read", {"file_path": "Imported/Deep/Fresh.md"})
            assert ok and "freshly imported ✨ needle" in text
            ok, text = await tool(client, "grep", {"pattern": "needle", "path": "Imported"})
            assert ok and "Imported/Deep/Fresh.md" in text
            assert "Imported/" in (await tool(client, "info", {}))[1]


async def test_a_folder_made_in_the_admin_is_visible_on_both_workers(plain: Cluster) -> None:
    async with mcp(plain, plain.a) as (on_a, _), mcp(plain, plain.b) as (on_b, _):
        for client in (on_a, on_b):
            assert "Admin Made" not in (await tool(client, "info", {}))[1]
        admin = await asyncio.to_thread(Admin, plain.b)
        response = await asyncio.to_thread(admin.post, "/admin/lensrelay/folder/add/", {"name": "Admin Made"})
        assert response.status_code == 302
        for client in (on_a, on_b):

            async def listed(client: Client = client) -> bool:
                return "Admin Made/" in (await tool(client, "info", {}))[1]

            await within(2.0, listed, "a folder made in the admin through MCP info")


async def test_an_admin_delete_disappears_from_every_worker(plain: Cluster, yclients: Any) -> None:
    folder_doc = plain.folder_doc_id("Team")
    watchers = [
        await yclients(server.doc_server_url(folder_doc), folder_doc, params={"token": plain.token})
        for server in plain.workers
    ]
    for watcher in watchers:
        await watcher.wait_map("filemeta_v0", "/Doomed.md", timeout=5)
    async with mcp(plain, plain.a) as (on_a, _), mcp(plain, plain.b) as (on_b, _):
        for client in (on_a, on_b):
            assert (await tool(client, "read", {"file_path": "Team/Doomed.md"}))[0]
        [(pk,)] = plain.query("SELECT id FROM lensrelay_document WHERE path = '/Doomed.md'")
        admin = await asyncio.to_thread(Admin, plain.a)
        response = await asyncio.to_thread(
            admin.post, f"/admin/lensrelay/document/{pk}/delete/", {"post": "yes"}
        )
        assert response.status_code == 302
        for watcher in watchers:
            await watcher.wait_map("filemeta_v0", "/Doomed.md", present=False, timeout=5)
            await watcher.wait_map("filemeta_v0", "/_trash/Doomed.md", timeout=5)  # into the trash
        for client in (on_a, on_b):

            async def gone(client: Client = client) -> bool:
                found, _ = await tool(client, "read", {"file_path": "Team/Doomed.md"})
                globbed = (await tool(client, "glob", {"pattern": "**/Doomed*", "path": "Team"}))[1]
                return not found and "Doomed" not in globbed

            await within(2.0, gone, "a deleted document through MCP")
        for server in plain.workers:
            assert api_documents(server, plain.token, "Team/Doomed.md") == []
        # A later folder change (a client adds a file) must not bring the row back.
        await watchers[1].map_set(
            "filemeta_v0", "/Later.md", {"id": str(uuid.uuid4()), "type": "markdown", "version": 0}
        )
        await asyncio.sleep(1.5)
        assert plain.query("SELECT count(*) FROM lensrelay_document WHERE path = '/Doomed.md'") == [(0,)]
        assert plain.query("SELECT count(*) FROM lensrelay_document WHERE path = '/Later.md'") == [(1,)]


async def test_an_mcp_edit_through_a_reaches_b_and_an_admin_accept_on_b_reaches_a(
    plain: Cluster, yclients: Any
) -> None:
    doc_id, on_a_client, on_b_client = await one_on_each(plain, yclients, "Team/Busy.md")
    async with mcp(plain, plain.a) as (on_a, transport):
        assert (await tool(on_a, "read", {"file_path": "Team/Busy.md"}))[0]
        ok, text = await tool(
            on_a, "edit", {"file_path": "Team/Busy.md", "old_string": "base", "new_string": "summit"}
        )
        assert ok, text
        assert set(transport.used) == {plain.a.port}
    raw = await on_b_client.wait_text(contains="summit++}", timeout=5)
    assert "{--" in raw
    [(pk,)] = plain.query(
        "SELECT id FROM suggestions_suggestion WHERE doc_id = %s AND status = 'pending'", doc_id
    )
    admin = await asyncio.to_thread(Admin, plain.b)
    response = await asyncio.to_thread(
        admin.post, f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "accept"}
    )
    assert response.status_code == 302
    await on_a_client.wait_text(equals="summit\n", timeout=5)
    assert await on_b_client.text() == "summit\n"
    assert plain.query("SELECT status FROM suggestions_suggestion WHERE id = %s", pk) == [("accepted",)]


async def test_an_mcp_session_continues_across_workers(plain: Cluster) -> None:
    async with mcp(plain, plain.a, plain.b) as (client, transport):
        assert (await tool(client, "read", {"file_path": "Team/Shared.md"}))[0]
        # The read mark was made on one worker; the edit may land on the other.
        for _ in range(2):
            ok, text = await tool(
                client,
                "edit",
                {"file_path": "Team/Shared.md", "old_string": "read by", "new_string": "seen by"},
            )
            if ok:
                break
        assert ok, text
        assert set(transport.used) == {plain.a.port, plain.b.port}


async def test_a_worker_killed_mid_session_loses_nothing(plain: Cluster, yclients: Any) -> None:
    doc_id, alice, bob = await one_on_each(plain, yclients, "Team/Shared.md")
    before = await alice.text()
    for n in range(20):
        await alice.insert(0, f"{n} ")
    expected = "".join(f"{n} " for n in reversed(range(20))) + before
    await bob.wait_text(equals=expected, timeout=5)
    plain.a.kill()
    await alice.kill()
    await bob.insert(0, "after the kill ")
    plain.a.start()
    fresh = await yclients(plain.a.doc_server_url(doc_id), doc_id, params={"token": plain.token})
    await fresh.wait_text(equals="after the kill " + expected, timeout=5)


# -- a lossy channel layer, a lagging worker, compaction all the time ----


@pytest.fixture(scope="module")
def lossy(node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    shared = {
        "LENSRELAY_CHANNEL_LAYER_BACKEND": "tests.e2e.lossy_layer.LossyRedisChannelLayer",
        "LENSRELAY_TEST_DROP_SHARE": "0.35",
        "LENSRELAY_COMPACT_AFTER_UPDATES": "8",
    }
    # Worker A polls the log slowly: it lags behind B's compactions.
    with cluster(tmp_path_factory, shared=shared, each=[{"LENSRELAY_POLL_SECONDS": "3"}, {}]) as (live, _):
        yield live


async def test_clients_converge_despite_drops_compaction_and_a_lagging_worker(
    lossy: Cluster, yclients: Any
) -> None:
    doc_id = lossy.doc_id("Team/Busy.md")
    clients = [
        await yclients(
            server.doc_server_url(doc_id), doc_id, params={"token": lossy.token}, label=f"w{n}c{k}"
        )
        for n, server in enumerate(lossy.workers)
        for k in range(2)
    ]

    async def type_words(index: int, client: Any) -> None:
        for n in range(30):
            await client.insert(0, f"[{index}.{n}]")
            await asyncio.sleep(0.01)

    await asyncio.gather(*(type_words(index, client) for index, client in enumerate(clients)))
    words = {f"[{index}.{n}]" for index in range(len(clients)) for n in range(30)}

    async def converged() -> bool:
        texts = [await client.text() for client in clients]
        return len(set(texts)) == 1 and all(word in texts[0] for word in words)

    took = await within(15.0, converged, "every client converging")
    final = await clients[0].text()
    assert final.endswith("base\n")
    assert lossy.query("SELECT count(*) FROM lensrelay_ysnapshot WHERE doc_id = %s", doc_id) == [(1,)]
    for server in lossy.workers:
        fresh = await yclients(server.doc_server_url(doc_id), doc_id, params={"token": lossy.token})
        assert await fresh.text() == final
    print(f"converged {took:.1f} s after the last edit")


# -- Redis and PostgreSQL cut and restored ----


@pytest.fixture(scope="module")
def faulty(
    node_modules: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Cluster, TcpProxy]]:
    # A slow poll makes the fast path (Redis) and the fallback (the log) easy to tell apart.
    each = [{"LENSRELAY_POLL_SECONDS": "2"}, {"LENSRELAY_POLL_SECONDS": "2"}]
    with cluster(tmp_path_factory, shared={}, each=each, via_proxy=True) as (live, proxy):
        assert proxy is not None
        yield live, proxy


async def delivery_seconds(sender: Any, receiver: Any, marker: str) -> float:
    start = time.monotonic()
    await sender.insert(0, marker)
    await receiver.wait_text(contains=marker, timeout=10)
    return time.monotonic() - start


async def test_a_redis_outage_closes_no_socket_and_the_fast_path_comes_back(
    faulty: tuple[Cluster, TcpProxy], yclients: Any
) -> None:
    live, _ = faulty
    doc_id, alice, bob = await one_on_each(live, yclients, "Team/Shared.md")
    fast = [await delivery_seconds(alice, bob, f"<fast{n}>") for n in range(3)]
    assert statistics.median(fast) < 1.0
    live.redis.stop()
    # Each worker keeps serving; between workers the database log carries the edits.
    assert await delivery_seconds(alice, bob, "<during>") < 6
    assert await delivery_seconds(bob, alice, "<during too>") < 6
    await asyncio.sleep(1)
    live.redis.start()  # back, and empty: every group membership is gone
    late = await yclients(live.b.doc_server_url(doc_id), doc_id, params={"token": live.token})
    assert "<during too>" in await late.text()
    await asyncio.sleep(1.5)
    back = [await delivery_seconds(alice, bob, f"<back{n}>") for n in range(5)]
    back += [await delivery_seconds(bob, alice, f"<back{n}b>") for n in range(5)]
    assert statistics.median(back) < 1.0, back  # the poll alone would take about a second on average
    assert closes(alice, bob, late) == 0


async def test_a_database_outage_answers_json_rpc_and_loses_nothing(
    faulty: tuple[Cluster, TcpProxy], yclients: Any
) -> None:
    live, proxy = faulty
    doc_id, alice, bob = await one_on_each(live, yclients, "Team/Busy.md")
    async with mcp(live, live.a) as (client, _):
        assert (await tool(client, "read", {"file_path": "Team/Busy.md"}))[0]
        proxy.cut()
        try:
            for n in range(5):
                await alice.insert(0, f"<cut{n}>")
            with pytest.raises(MCPError) as refused:
                await client.call_tool("read", {"file_path": "Team/Busy.md"})
            assert "database" in str(refused.value).lower()
            raw = await asyncio.to_thread(
                httpx.post,
                f"{live.b.http_url}/mcp",
                json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
                headers={
                    "Authorization": f"Bearer {live.token}",
                    "Accept": "application/json, text/event-stream",
                },
            )
            assert raw.status_code == 503 and raw.headers["content-type"].startswith("application/json")
            assert raw.json()["error"]["message"].startswith("Service unavailable")
            await asyncio.sleep(8)
        finally:
            proxy.restore()
        expected = "".join(f"<cut{n}>" for n in reversed(range(5)))
        await bob.wait_text(contains=expected, timeout=15)
        # Recovered without a restart.
        ok, text = await tool(client, "read", {"file_path": "Team/Busy.md"})
        assert ok and expected in text
    fresh = await yclients(live.b.doc_server_url(doc_id), doc_id, params={"token": live.token})
    assert expected in await fresh.text()
    assert closes(alice, bob) == 0
