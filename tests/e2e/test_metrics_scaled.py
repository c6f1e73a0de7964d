"""`/metrics` across two daphne workers on PostgreSQL and Redis, scraped with prometheus_client's parser.

Both workers share one `PROMETHEUS_MULTIPROC_DIR`, as docs/metrics.md tells scaled-out workers on one machine
to, so a scrape of either answers for both. The workload is real: npm y-websocket clients on each worker,
the official MCP SDK client sending its calls to both workers in turn, a staff member accepting a
suggestion in the admin. Worker A wants the metrics token and allows no address of ours; worker B has no
token and allows 127.0.0.1. Without PostgreSQL or Redis these tests fail (`require_services`), never skip.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from lensrelay.observability import metrics
from tests.e2e.test_scaled import Admin, Cluster, cluster, mcp, one_on_each, tool

pytestmark = [
    pytest.mark.scaled,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

METRICS_TOKEN = "metrics-token-for-the-scaled-test-0123456789"
WRONG_TOKEN = "metrics-token-for-the-scaled-test-0123456780"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module")
def metrics_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prometheus-multiproc")


@pytest.fixture(scope="module")
def two(node_modules: Path, tmp_path_factory: pytest.TempPathFactory, metrics_dir: Path) -> Iterator[Cluster]:
    # One derive process for the database, beside worker A, as docs/scale.md has it: its backlog is exported.
    shared = {"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir), "LENSRELAY_DERIVED_WORK": "process"}
    each = [
        {
            "LENSRELAY_METRICS_TOKEN": METRICS_TOKEN,
            "LENSRELAY_METRICS_ALLOW": "10.0.0.0/8,fd00::/8",
            "LENSRELAY_DERIVE_BESIDE": "true",
        },
        {
            "LENSRELAY_METRICS_TOKEN": "",
            "LENSRELAY_METRICS_ALLOW": "127.0.0.1/32",
            "LENSRELAY_DERIVE_BESIDE": "false",
        },
    ]
    with cluster(tmp_path_factory, shared=shared, each=each) as (live, _):
        yield live


def scrape_text(url: str, *, token: str | None = METRICS_TOKEN, accept: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if accept:
        headers["Accept"] = accept
    return httpx.get(f"{url}/metrics", headers=headers, timeout=30)


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


async def scrape(url: str, *, token: str | None = METRICS_TOKEN) -> Samples:
    response = await asyncio.to_thread(scrape_text, url, token=token)
    assert response.status_code == 200, response.text[:300]
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


async def until(
    check: Callable[[Samples], bool],
    scrape_once: Callable[[], Awaitable[Samples]],
    what: str,
    seconds: float = 10,
) -> Samples:
    deadline = time.monotonic() + seconds
    while True:
        samples = await scrape_once()
        if check(samples):
            return samples
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds} s")
        await asyncio.sleep(0.2)


# -- protection ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "path"),
    [
        ({}, "/metrics"),  # no token, from an address A does not allow
        ({"Authorization": f"Bearer {WRONG_TOKEN}"}, "/metrics"),
        ({"Authorization": f"Bearer {METRICS_TOKEN[:-1]}"}, "/metrics"),  # a prefix of the right one
        ({"Authorization": f"Basic {METRICS_TOKEN}"}, "/metrics"),
        ({"Authorization": "Bearer"}, "/metrics"),
        ({}, f"/metrics?token={METRICS_TOKEN}"),  # tokens go in the header only
        ({"X-Forwarded-For": "10.1.2.3"}, "/metrics"),  # daphne runs without --proxy-headers here
    ],
)
def test_an_unauthenticated_scrape_of_a_is_refused(two: Cluster, headers: dict[str, str], path: str) -> None:
    response = httpx.get(f"{two.a.http_url}{path}", headers=headers, timeout=30)
    assert response.status_code == 401, response.text[:200]
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "lensrelay_" not in response.text


def test_a_wrong_token_is_refused_even_from_an_allowed_address(two: Cluster) -> None:
    # B has no token configured: a bearer token is no credential there and its address decides (allowed).
    assert scrape_text(two.b.http_url, token=WRONG_TOKEN).status_code == 200
    # A has one: whoever presents a token must present the right one.
    assert scrape_text(two.a.http_url, token=WRONG_TOKEN).status_code == 401


def test_an_allowed_address_scrapes_without_a_token_and_the_token_scrapes_from_anywhere(two: Cluster) -> None:
    by_address = scrape_text(two.b.http_url, token=None)
    by_token = scrape_text(two.a.http_url)
    for response in (by_address, by_token):
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
        assert "lensrelay_open_connections" in response.text


def test_other_methods_are_refused_and_openmetrics_is_offered(two: Cluster) -> None:
    unauthenticated = httpx.post(f"{two.a.http_url}/metrics", timeout=30)
    assert unauthenticated.status_code == 401 and "lensrelay_" not in unauthenticated.text
    posted = httpx.post(
        f"{two.a.http_url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30
    )
    assert posted.status_code == 405 and "lensrelay_" not in posted.text
    assert posted.headers["allow"] == "GET, HEAD"
    response = scrape_text(two.a.http_url, accept="application/openmetrics-text; version=1.0.0")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    names = {family.name for family in openmetrics_families(response.text)}
    assert {"lensrelay_updates_received", "lensrelay_open_connections"} <= names


@pytest.mark.parametrize(
    "path",
    [
        "/metrics/",
        "//metrics",
        "/metrics.txt",
        "/api/metrics",
        "/admin/metrics",
        "/d/metrics/versions",
        "/ready",
        "/ready?metrics",
        "/mcp",
        "/METRICS",
    ],
)
def test_the_metrics_do_not_leak_through_other_routes(two: Cluster, path: str) -> None:
    for server in two.workers:
        # B allows our address: nothing but /metrics itself may answer with the numbers.
        response = httpx.get(
            f"{server.http_url}{path}", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30
        )
        assert "lensrelay_updates_received" not in response.text, (server.name, path, response.status_code)
        assert "# TYPE" not in response.text


# -- the workload -------------------------------------------------------------------------------------------


async def test_counters_move_as_the_workload_does_on_both_workers(two: Cluster, yclients: Any) -> None:
    def on_a() -> Awaitable[Samples]:
        return scrape(two.a.http_url)

    before = await on_a()
    connections_before = value(before, "lensrelay_open_connections")

    # y-websocket clients of one note on A and on B, a second one on B; the writer on A.
    doc_id, writer, reader = await one_on_each(two, yclients, "Team/Shared.md")
    other = await yclients(two.b.doc_server_url(doc_id), doc_id, params={"token": two.token})
    opened = await until(
        lambda s: value(s, "lensrelay_open_connections") == connections_before + 3, on_a, "three connections"
    )
    assert total(opened, "lensrelay_rooms", kind="content") >= 2  # the note, live on each worker

    for n in range(20):
        await writer.insert(0, f"{n % 10}")
    # Inserted at the front one by one: this reads so once all twenty have arrived.
    await reader.wait_text(contains="98765432109876543210", timeout=10)
    await other.wait_text(contains="98765432109876543210", timeout=10)

    async with mcp(two, two.a, two.b) as (client, transport):
        for _ in range(2):
            assert (await tool(client, "read", {"file_path": "Team/Busy.md"}))[0]
        assert not (await tool(client, "read", {"file_path": "Team/Nowhere.md"}))[0]
        assert not (await tool(client, "no_such_tool_xyz", {}))[0]
        ok, text = await tool(
            client, "edit", {"file_path": "Team/Busy.md", "old_string": "base", "new_string": "summit"}
        )
        if not ok:  # the read mark was made on the other worker a moment ago: asked again, it is there
            ok, text = await tool(
                client, "edit", {"file_path": "Team/Busy.md", "old_string": "base", "new_string": "summit"}
            )
        assert ok, text
        assert set(transport.used) == {two.a.port, two.b.port}

    [(pk,)] = two.query("SELECT id FROM suggestions_suggestion WHERE status = 'pending'")
    pending = await on_a()
    assert value(pending, "lensrelay_suggestions_pending") == 1
    admin = await asyncio.to_thread(Admin, two.b)
    response = await asyncio.to_thread(
        admin.post, f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "accept"}
    )
    assert response.status_code == 302

    after = await until(
        lambda s: (
            value(s, "lensrelay_suggestions_decided_total", outcome="accepted")
            >= value(before, "lensrelay_suggestions_decided_total", outcome="accepted") + 1
            # B's deliveries, which B hands over a second apart (lensrelay.observability.metrics)
            and total(s, "lensrelay_deliveries_total", kind="update")
            >= total(before, "lensrelay_deliveries_total", kind="update") + 2
        ),
        on_a,
        "the decision and B's deliveries counted",
    )

    def grew(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    # Updates from the y-websocket writer (each insert is one update frame), and their deliveries to the
    # readers on B (merged batches: at least one frame each, at most one per update and reader).
    assert grew("lensrelay_updates_received_total", transport="websocket") >= 20
    assert 2 <= grew("lensrelay_deliveries_total", kind="update") <= 40
    assert grew("lensrelay_persist_duration_seconds_count") >= 1
    assert grew("lensrelay_broadcast_duration_seconds_count") >= 1
    assert grew("lensrelay_deliveries_total", kind="awareness") >= 1  # providers announce themselves
    # MCP calls by tool and outcome, made on both workers, counted in one scrape.
    assert grew("lensrelay_mcp_tool_calls_total", tool="read", outcome="ok") == 2
    assert grew("lensrelay_mcp_tool_calls_total", tool="read", outcome="error") == 1
    assert grew("lensrelay_mcp_tool_calls_total", tool="unknown", outcome="unknown_tool") == 1
    assert grew("lensrelay_mcp_tool_calls_total", tool="edit", outcome="ok") == 1
    assert grew("lensrelay_mcp_tool_call_duration_seconds_count", tool="read") == 3
    assert not any("no_such_tool" in str(labels) for _, labels in after)  # callers' names are no labels
    # The suggestion: created, pending while it waited, accepted, its decision latency observed.
    assert grew("lensrelay_suggestions_created_total", kind="edit") == 1
    assert grew("lensrelay_suggestions_decided_total", outcome="accepted") == 1
    assert grew("lensrelay_suggestion_decision_seconds_count", outcome="accepted") == 1
    assert value(after, "lensrelay_suggestions_pending") == 0
    # Each worker samples its loop 20 times a second.
    assert grew("lensrelay_event_loop_lag_seconds_count") >= 10
    assert ("lensrelay_event_loop_lag_last_seconds", frozenset()) in after
    # Webhook numbers are read from the rows (nothing is hooked here); the derive backlog from the log.
    assert after[("lensrelay_webhook_deliveries_pending", frozenset())] == 0
    assert after[("lensrelay_webhook_endpoints_paused", frozenset())] == 0
    assert ("lensrelay_derive_backlog_rows", frozenset()) in after
    await until(lambda s: value(s, "lensrelay_derive_backlog_rows") == 0, on_a, "derive caught up", 20)

    # B answers for both workers too (same directory): the same totals once each worker has handed over
    # its last second of per-update counts (lensrelay.observability.metrics, FLUSH_SECONDS).
    names = ("lensrelay_updates_received_total", "lensrelay_mcp_tool_calls_total")
    await asyncio.sleep(2 * metrics.FLUSH_SECONDS)
    on_a_now = await on_a()
    on_b = await scrape(two.b.http_url, token=None)
    for name in names:
        assert total(on_b, name) == total(on_a_now, name) >= total(after, name)

    for client_ in (writer, reader, other):
        await client_.close()
    await until(
        lambda s: value(s, "lensrelay_open_connections") == connections_before, on_a, "connections closed"
    )


async def test_a_killed_worker_stops_counting_its_connections_but_keeps_its_counts(
    two: Cluster, yclients: Any, metrics_dir: Path
) -> None:
    before = await scrape(two.a.http_url)
    doc_id = two.doc_id("Team/Doomed.md")
    on_b = await yclients(two.b.doc_server_url(doc_id), doc_id, params={"token": two.token})
    await on_b.insert(0, "x")
    counted = await until(
        lambda s: value(s, "lensrelay_open_connections") == value(before, "lensrelay_open_connections") + 1,
        lambda: scrape(two.a.http_url),
        "B's connection counted",
    )
    updates = total(counted, "lensrelay_updates_received_total")
    pid = two.b.pid
    assert pid is not None and (metrics_dir / f"gauge_livesum_{pid}.db").exists()
    await two.b.akill()  # SIGKILL: B cannot say it ended; the next scrape finds out
    after = await scrape(two.a.http_url)
    assert value(after, "lensrelay_open_connections") == value(before, "lensrelay_open_connections")
    assert total(after, "lensrelay_updates_received_total") >= updates  # counters never go back
    assert not (metrics_dir / f"gauge_livesum_{pid}.db").exists()
    await on_b.kill()
    # Restarted, B counts again in the same directory; stopped with SIGTERM, it marks itself ended.
    await two.b.astart()
    restarted = two.b.pid
    assert restarted is not None and (metrics_dir / f"gauge_livesum_{restarted}.db").exists()
    await two.b.astop()
    assert not (metrics_dir / f"gauge_livesum_{restarted}.db").exists()
    await two.b.astart()
