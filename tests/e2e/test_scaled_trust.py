"""Trust across two daphne workers on one PostgreSQL database and one Redis (the scaled-out shape).

Revoking or narrowing a token in a third process cuts off its sockets on both workers within a second,
and ends its MCP session whichever worker it talks to; two reviewers, each signed in at a different
worker, race accept against reject on 20 suggestions per kind and exactly one of each pair wins.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import YClientFactory
from tests.e2e.liveserver import LiveServer, run_manage
from tests.e2e.test_decision_race_http import (
    KINDS,
    Pending,
    propose_pending,
    race_and_check,
    sign_in_reviewers,
)
from tests.e2e.test_revocation import (
    change_token,
    expect_closed,
    mcp_session,
    raw_mcp_post,
    text_of,
    watch_closing,
)
from tests.e2e.test_scaled import api_documents, cluster

pytestmark = [
    pytest.mark.scaled,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

Workers = tuple[LiveServer, LiveServer, dict[str, str]]


@pytest.fixture(scope="module")
def workers(node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    """Two workers on a fresh PostgreSQL database and a private Redis, with the folder Team imported."""
    with cluster(tmp_path_factory, shared={}, each=[{}, {}]) as (live, _):
        yield live.a, live.b, {"token": live.token}


def doc_id_of(server: LiveServer, token: str, path: str) -> str:
    [document] = api_documents(server, token, path)
    return str(document["doc_id"])


def manage_on(server: LiveServer) -> Callable[..., str]:
    """`manage.py ARGS` against the workers' shared database, as a third process."""

    def manage(*args: str) -> str:
        return run_manage(server.env, *args).stdout

    return manage


@pytest.fixture(scope="module")
def scoped_token(workers: Workers, tmp_path_factory: pytest.TempPathFactory) -> str:
    first, _, _ = workers
    vault = tmp_path_factory.mktemp("other-vault")
    (vault / "Note.md").write_text("The other folder's note.\n")
    run_manage(first.env, "import_vault", str(vault), "--folder", "Other")
    created = run_manage(
        first.env, "create_token", "--name", "cut", "--role", "edit", "--folder", "Team", "--folder", "Other"
    )
    return created.stdout.strip().splitlines()[-1]


async def test_narrowing_and_revoking_reach_both_workers(
    workers: Workers,
    scoped_token: str,
    yclients: YClientFactory,
) -> None:
    first, second, _ = workers
    raw = scoped_token
    team = doc_id_of(first, raw, "Team/Shared.md")
    other = doc_id_of(second, raw, "Other/Note.md")
    on_first = await yclients(first.doc_server_url(team), team, params={"token": raw}, label="w1-team")
    on_second = await yclients(second.doc_server_url(team), team, params={"token": raw}, label="w2-team")
    lost = await yclients(second.doc_server_url(other), other, params={"token": raw}, label="w2-other")

    async with mcp_session(second.http_url, raw) as (client, issued):
        assert "other folder" in text_of(await client.call_tool("read", {"file_path": "Other/Note.md"}))
        watchers = watch_closing(lost)
        committed = await change_token(manage_on(first), raw, keep=["Team"])
        await expect_closed(watchers, code=4403, committed=committed)
    assert (await raw_mcp_post(first.http_url, raw, issued[0])).status_code == 404
    await asyncio.sleep(0.5)
    assert on_first.events_named("closed") == [] and on_second.events_named("closed") == []

    watchers = watch_closing(on_first, on_second)
    committed = await change_token(manage_on(second), raw, keep=None)
    await expect_closed(watchers, code=4401, committed=committed)
    started = time.monotonic()
    for server in (first, second):
        assert (await raw_mcp_post(server.http_url, raw, issued[0])).status_code == 401
    assert time.monotonic() - started < 5


@pytest.fixture(scope="module")
def pending(workers: Workers, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Pending]]:
    first, _, _ = workers
    return propose_pending(manage_on(first), Path(tmp_path_factory.mktemp("race-vault")))


@pytest.mark.parametrize("kind", KINDS)
async def test_reviewers_on_different_workers_have_one_winner(
    workers: Workers,
    pending: dict[str, list[Pending]],
    kind: str,
) -> None:
    first, second, _ = workers
    reviewers = await asyncio.to_thread(sign_in_reviewers, {"alice": first.http_url, "bob": second.http_url})
    await race_and_check(manage_on(first), kind, pending[kind], reviewers)
