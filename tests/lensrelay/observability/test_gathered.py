"""The live path's per-update series, gathered in plain numbers and handed to prometheus_client in bulk
(lensrelay.observability.metrics): what a scrape shows is what observing each value would have shown."""

from __future__ import annotations

import random
import threading

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from lensrelay.observability import metrics
from lensrelay.observability.metrics import DATABASE_BUCKETS, FAST_BUCKETS, _Observations


def exposition(histogram: Histogram, registry: CollectorRegistry) -> list[bytes]:
    """The scrape's lines under one name, without the creation time (the two were made apart)."""
    text = generate_latest(registry).replace(histogram._name.encode(), b"h")
    return [line for line in text.splitlines() if not line.startswith(b"h_created")]


def test_observations_handed_over_in_bulk_read_as_if_observed_one_by_one() -> None:
    """Holds the contract with prometheus_client's internals (`_sum`, `_buckets`) that the bulk hand-over
    uses: a version that changed them fails here."""
    rng = random.Random(36)
    for buckets in (DATABASE_BUCKETS, FAST_BUCKETS):
        bounds = [*buckets, float("inf")]
        # Every bound exactly, values between them, beyond the last, and zero.
        values = [0.0, *buckets, *(rng.uniform(0, 2 * buckets[-1]) for _ in range(500)), 10 * buckets[-1]]
        one_by_one_registry, bulk_registry = CollectorRegistry(), CollectorRegistry()
        one_by_one = Histogram("one", "h", buckets=buckets, registry=one_by_one_registry)
        bulk = Histogram("bulk", "h", buckets=buckets, registry=bulk_registry)
        assert list(one_by_one._upper_bounds) == bounds
        gathered = _Observations(buckets)
        for value in values:
            one_by_one.observe(value)
            gathered.add(value)
        gathered.take().hand_to(bulk)
        assert exposition(bulk, bulk_registry) == exposition(one_by_one, one_by_one_registry)
        # What was taken is gone: a second hand-over adds nothing.
        gathered.take().hand_to(bulk)
        assert exposition(bulk, bulk_registry) == exposition(one_by_one, one_by_one_registry)


def sample(name: str, **labels: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_counts_made_on_several_threads_during_flushes_are_all_handed_over() -> None:
    metrics.flush_live_counts()
    before = sample("lensrelay_updates_received_total", transport="websocket")
    delivered = sample("lensrelay_deliveries_total", kind="update")
    persisted = sample("lensrelay_persist_duration_seconds_count")

    def count() -> None:
        for _ in range(5000):
            metrics.update_received_websocket()
            metrics.updates_delivered(3, 0.0002)
            metrics.persisted(0.001)

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for _ in range(50):
        metrics.flush_live_counts()  # as a scrape from a request thread would
    for thread in threads:
        thread.join()
    metrics.flush_live_counts()
    assert sample("lensrelay_updates_received_total", transport="websocket") - before == 20000
    assert sample("lensrelay_deliveries_total", kind="update") - delivered == 60000
    assert sample("lensrelay_persist_duration_seconds_count") - persisted == 20000


def test_counts_reach_prometheus_client_a_second_apart_without_a_scrape(monkeypatch: object) -> None:
    clock = [1000.0]
    monkeypatch.setattr(metrics.time, "monotonic", lambda: clock[0])  # type: ignore[attr-defined]
    metrics.flush_live_counts()
    before = sample("lensrelay_updates_received_total", transport="websocket")
    metrics.update_received_websocket()
    clock[0] += 0.5
    metrics.update_received_websocket()
    assert sample("lensrelay_updates_received_total", transport="websocket") == before  # gathered
    clock[0] += 0.6
    metrics.update_received_websocket()  # a second after the last hand-over: all three go
    assert sample("lensrelay_updates_received_total", transport="websocket") - before == 3
