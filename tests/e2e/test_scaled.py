"""The scaled-out shape: two daphne workers on one PostgreSQL database and one Redis.

A client on each worker edits the same document; each sees the other's edits, through the Redis channel
layer (fast path) and the shared update log (the guarantee).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
import redis

from tests.e2e.liveserver import LiveServer, lensrelay_server, run_manage
from tests.e2e.yclient import utf16_len

pytestmark = pytest.mark.scaled

POSTGRES = os.environ.get("LENSRELAY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
REDIS = os.environ.get("LENSRELAY_TEST_REDIS", "redis://127.0.0.1:6379")


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


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    require_services()
    name = f"lensrelay_e2e_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{POSTGRES}/{name}"
    finally:
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def workers(
    database: str, node_modules: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, LiveServer, dict[str, str]]]:
    redis_db = 9
    redis.Redis.from_url(f"{REDIS}/{redis_db}").flushdb()
    env = {"DATABASE_URL": database, "REDIS_URL": f"{REDIS}/{redis_db}"}
    first = lensrelay_server(tmp_path_factory.mktemp("worker1"), **env)
    second = lensrelay_server(tmp_path_factory.mktemp("worker2"), **env)
    second.setup = []  # one migration for the shared database
    first.start()
    second.start()
    vault = tmp_path_factory.mktemp("vault")
    (vault / "Shared.md").write_text("Written once, read by two workers.\n")
    run_manage(first.env, "import_vault", str(vault), "--folder", "Team")
    created = run_manage(first.env, "create_token", "--name", "scaled", "--role", "edit")
    token = created.stdout.strip().splitlines()[-1]
    try:
        yield first, second, {"token": token}
    finally:
        first.stop()
        second.stop()


def doc_id_of(server: LiveServer, token: str, path: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    response = httpx.get(f"{server.http_url}/api/documents", params={"path": path}, headers=headers)
    response.raise_for_status()
    [document] = response.json()
    return str(document["doc_id"])


async def test_clients_on_different_workers_see_each_other(workers, yclients) -> None:  # type: ignore[no-untyped-def]
    first, second, secrets = workers
    token = secrets["token"]
    doc_id = doc_id_of(first, token, "Team/Shared.md")
    assert doc_id_of(second, token, "Team/Shared.md") == doc_id
    alice = await yclients(first.doc_server_url(doc_id), doc_id, params={"token": token})
    bob = await yclients(second.doc_server_url(doc_id), doc_id, params={"token": token})
    assert await bob.text() == "Written once, read by two workers.\n"
    await alice.insert(0, "Alice 👋 ")
    await bob.wait_text(equals="Alice 👋 Written once, read by two workers.\n", timeout=5)
    await bob.insert(utf16_len("Alice 👋 Written once"), " (日本語 by Bob)")
    expected = "Alice 👋 Written once (日本語 by Bob), read by two workers.\n"
    await alice.wait_text(equals=expected, timeout=5)


async def test_worker_killed_mid_session_loses_nothing(workers, yclients) -> None:  # type: ignore[no-untyped-def]
    first, second, secrets = workers
    token = secrets["token"]
    doc_id = doc_id_of(first, token, "Team/Shared.md")
    alice = await yclients(first.doc_server_url(doc_id), doc_id, params={"token": token})
    bob = await yclients(second.doc_server_url(doc_id), doc_id, params={"token": token})
    before = await alice.text()
    await alice.insert(0, "durable ")
    await bob.wait_text(equals="durable " + before, timeout=5)
    first.kill()
    await alice.kill()
    await bob.kill()
    first.start()
    fresh = await yclients(first.doc_server_url(doc_id), doc_id, params={"token": token})
    assert await fresh.text() == "durable " + before
