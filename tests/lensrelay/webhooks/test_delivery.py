"""The outbox and its delivery against a real local receiver: fan-out by type and folder scope, backoff,
claims that outlive a killed process, pausing after a day of failures, resuming, the change follower's
debounce, and the counts a metrics exporter reads."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from lensrelay.docstore.derived import cursor_load
from lensrelay.models import Document, Folder, YUpdate
from lensrelay.observability.scrape import metrics_exposition
from lensrelay.webhooks import delivery, selectors
from lensrelay.webhooks.changes import CURSOR_NAME, IDLE_SAVE_SECONDS, ChangeFollower
from lensrelay.webhooks.delivery import (
    WebhookDeliverer,
    attempt_record,
    deliveries_claim,
    events_release,
    retry_delay,
    webhook_rows_prune,
)
from lensrelay.webhooks.endpoints import EndpointInvalid, endpoint_create, endpoint_resume, endpoint_send_test
from lensrelay.webhooks.events import event_record
from lensrelay.webhooks.guard import UrlRefused
from lensrelay.webhooks.models import (
    TEST_EVENT,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from lensrelay.webhooks.selectors import webhook_delivery_counts
from lensrelay.webhooks.sending import SendResult
from tests.lensrelay.webhooks.receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)

FAILED = SendResult(status_code=500, response_excerpt="boom", error="HTTP 500", duration_ms=3)
OK = SendResult(status_code=204, response_excerpt="", error="", duration_ms=2)


@pytest.fixture(autouse=True)
def _fast(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = True
    settings.LENSRELAY_WEBHOOK_RETRY_BASE_SECONDS = 5.0
    settings.LENSRELAY_WEBHOOK_RETRY_MAX_SECONDS = 3600.0
    settings.LENSRELAY_WEBHOOK_TIMEOUT_SECONDS = 2.0
    settings.LENSRELAY_WEBHOOK_PAUSE_AFTER_SECONDS = 86400.0


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


def folders() -> tuple[Folder, Folder]:
    return Folder.objects.create(name="A"), Folder.objects.create(name="B")


def hook(receiver: Receiver, **kwargs: Any) -> WebhookEndpoint:
    kwargs.setdefault("all_folders", True)
    endpoint = endpoint_create(name="r", url=receiver.url, **kwargs)
    receiver.secret = endpoint.secret
    return endpoint


# -- backoff -------------------------------------------------------------------------------------------


def test_backoff_doubles_up_to_the_cap_with_jitter_in_the_upper_half() -> None:
    rng = random.Random(7)
    for attempt, full in [(1, 5), (2, 10), (3, 20), (4, 40), (10, 2560), (11, 3600), (500, 3600)]:
        for _ in range(50):
            delay = retry_delay(attempt, rng=rng)
            assert full / 2 <= delay <= full, (attempt, delay)
    delays = {round(retry_delay(3, rng=rng), 6) for _ in range(20)}
    assert len(delays) > 10  # jittered: endpoints that failed together do not retry together


def test_backoff_follows_the_settings(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_RETRY_BASE_SECONDS = 0.2
    settings.LENSRELAY_WEBHOOK_RETRY_MAX_SECONDS = 1.0
    assert 0.1 <= retry_delay(1) <= 0.2
    assert 0.5 <= retry_delay(30) <= 1.0


# -- endpoints and scope ---------------------------------------------------------------------------------


def test_an_endpoint_needs_folders_or_all_folders_and_a_known_type(receiver: Receiver) -> None:
    with pytest.raises(EndpointInvalid, match="no folder by default"):
        endpoint_create(name="x", url=receiver.url)
    with pytest.raises(EndpointInvalid, match="Unknown event types"):
        endpoint_create(name="x", url=receiver.url, all_folders=True, event_types=["document.nuked"])
    with pytest.raises(EndpointInvalid, match="at least one"):
        endpoint_create(name="x", url=receiver.url, all_folders=True, event_types=[])
    assert WebhookEndpoint.objects.count() == 0


def test_endpoint_urls_are_checked_when_created(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = False
    for url in ("http://127.0.0.1:9/", "http://[::1]/", "http://169.254.169.254/", "http://0x7f000001/"):
        with pytest.raises(UrlRefused):
            endpoint_create(name="x", url=url, all_folders=True)
    assert WebhookEndpoint.objects.count() == 0


def test_a_new_endpoint_gets_a_standard_webhooks_secret(receiver: Receiver) -> None:
    a = hook(receiver)
    b = hook(receiver)
    assert a.secret.startswith("whsec_") and a.secret != b.secret and len(a.secret) > 40


def test_events_reach_only_endpoints_of_their_folders_and_types(receiver: Receiver) -> None:
    a, b = folders()
    everything = hook(receiver, all_folders=True)
    only_a = hook(receiver, all_folders=False, folders=[a])
    only_moves = hook(receiver, event_types=["document.moved"])
    nothing = endpoint_create(
        name="n", url=receiver.url, all_folders=False, folders=[b], event_types=["document.moved"]
    )
    in_a = event_record(type="document.changed", data={}, folder_id=a.pk)
    in_b = event_record(type="document.changed", data={}, folder_id=b.pk)
    no_folder = event_record(type="suggestion.decided", data={}, folder_id=None)
    a_to_b = event_record(type="document.moved", data={}, folder_id=b.pk, other_folder_id=a.pk)
    test = endpoint_send_test(endpoint=only_a, user=None)
    assert events_release() == 5
    got = {(d.event_id, d.endpoint_id) for d in WebhookDelivery.objects.all()}
    assert in_a is not None and in_b is not None and no_folder is not None and a_to_b is not None
    assert got == {
        (in_a.pk, everything.pk),
        (in_a.pk, only_a.pk),
        (in_b.pk, everything.pk),
        (no_folder.pk, everything.pk),
        (a_to_b.pk, everything.pk),
        (a_to_b.pk, only_moves.pk),
        (test.pk, only_a.pk),
    }
    assert not WebhookDelivery.objects.filter(endpoint=nothing).exists()
    assert WebhookEvent.objects.filter(released=False).count() == 0


def test_nothing_is_recorded_when_no_endpoint_wants_the_type(receiver: Receiver) -> None:
    assert event_record(type="document.changed", data={}, folder_id=None) is None
    hook(receiver, event_types=["suggestion.created"])
    assert event_record(type="document.changed", data={}, folder_id=None) is None
    assert event_record(type="suggestion.created", data={}, folder_id=None) is not None
    WebhookEndpoint.objects.update(enabled=False)
    assert event_record(type="suggestion.created", data={}, folder_id=None) is None


# -- attempts, claims, pausing ---------------------------------------------------------------------------


def one_delivery(receiver: Receiver) -> tuple[WebhookEndpoint, WebhookEvent]:
    endpoint = hook(receiver)
    event = event_record(type="suggestion.created", data={"n": 1}, folder_id=None)
    assert event is not None
    events_release()
    return endpoint, event


def test_a_claim_outlives_the_timeout_and_a_killed_attempt_comes_due_again(receiver: Receiver) -> None:
    _, event = one_delivery(receiver)
    now = timezone.now()
    (claimed,) = deliveries_claim(limit=10, now=now)
    assert claimed.msg_id == event.msg_id
    # In flight (or its process killed): not due again before the claim runs out...
    assert deliveries_claim(limit=10, now=now + timedelta(seconds=6)) == []
    # ...then due again, under the same id and with the same body.
    (again,) = deliveries_claim(limit=10, now=now + timedelta(seconds=8))
    assert (again.msg_id, again.body) == (claimed.msg_id, claimed.body)


def test_a_failure_schedules_a_retry_and_a_success_delivers(receiver: Receiver) -> None:
    endpoint, _ = one_delivery(receiver)
    now = timezone.now()
    (claimed,) = deliveries_claim(limit=1, now=now)
    attempt_record(claimed=claimed, result=FAILED, started=now, now=now)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and delivery.attempts == 1
    assert now + timedelta(seconds=2.5) <= delivery.next_attempt_at <= now + timedelta(seconds=5)
    assert (delivery.last_status_code, delivery.last_response, delivery.last_error) == (
        500,
        "boom",
        "HTTP 500",
    )
    endpoint.refresh_from_db()
    assert endpoint.failing_since == now and endpoint.paused_at is None
    later = now + timedelta(seconds=10)
    (claimed,) = deliveries_claim(limit=1, now=later)
    attempt_record(claimed=claimed, result=OK, started=later, now=later)
    delivery.refresh_from_db()
    endpoint.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2 and delivery.delivered_at == later
    assert endpoint.failing_since is None
    assert [a.status_code for a in WebhookAttempt.objects.order_by("number")] == [500, 204]


def test_an_endpoint_failing_for_a_day_is_paused_and_says_why(receiver: Receiver) -> None:
    endpoint, _ = one_delivery(receiver)
    start = timezone.now()
    endpoint.failing_since = start
    endpoint.save()
    (claimed,) = deliveries_claim(limit=1, now=start)
    almost = start + timedelta(hours=23, minutes=59)
    attempt_record(claimed=claimed, result=FAILED, started=almost, now=almost)
    endpoint.refresh_from_db()
    assert endpoint.paused_at is None
    day = start + timedelta(days=1, seconds=1)
    (claimed,) = deliveries_claim(limit=1, now=day)
    attempt_record(claimed=claimed, result=FAILED, started=day, now=day)
    endpoint.refresh_from_db()
    assert endpoint.paused_at == day
    assert "every attempt failed since" in endpoint.paused_reason and "HTTP 500" in endpoint.paused_reason
    # Paused: nothing is attempted, but events keep being queued for it.
    assert deliveries_claim(limit=5, now=day + timedelta(days=2)) == []
    event_record(type="suggestion.created", data={"n": 2}, folder_id=None)
    events_release()
    assert WebhookDelivery.objects.filter(endpoint=endpoint, status="pending").count() == 2
    # Resumed: both are due at once, and the failure clock starts again.
    assert endpoint_resume(endpoint=endpoint) == 2
    endpoint.refresh_from_db()
    assert (endpoint.paused_at, endpoint.paused_reason, endpoint.failing_since) == (None, "", None)
    assert len(deliveries_claim(limit=5)) == 2


def test_a_success_in_between_restarts_the_failure_clock(settings: Any, receiver: Receiver) -> None:
    settings.LENSRELAY_WEBHOOK_PAUSE_AFTER_SECONDS = 100.0
    endpoint, _ = one_delivery(receiver)
    event_record(type="suggestion.created", data={"n": 2}, folder_id=None)
    events_release()
    t0 = timezone.now()
    first, second = deliveries_claim(limit=2, now=t0)
    attempt_record(claimed=first, result=FAILED, started=t0, now=t0)
    attempt_record(
        claimed=second, result=OK, started=t0 + timedelta(seconds=90), now=t0 + timedelta(seconds=90)
    )
    (first,) = deliveries_claim(limit=1, now=t0 + timedelta(seconds=150))
    t1 = t0 + timedelta(seconds=150)
    attempt_record(claimed=first, result=FAILED, started=t1, now=t1)
    endpoint.refresh_from_db()
    assert endpoint.paused_at is None and endpoint.failing_since == t1


def scraped_values() -> dict[str, float]:
    body, _ = metrics_exposition()
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


# -- the loop against a real receiver ---------------------------------------------------------------------


async def test_the_loop_delivers_signed_events_and_retries_after_the_receiver_was_down(
    settings: Any, receiver: Receiver
) -> None:
    # A retry 1-2 s after a failure: the first pass below makes exactly one attempt each.
    settings.LENSRELAY_WEBHOOK_RETRY_BASE_SECONDS = 2.0
    settings.LENSRELAY_WEBHOOK_RETRY_MAX_SECONDS = 2.0
    await sync_to_async(hook)(receiver)
    receiver.stop()  # down
    recorded = [
        await sync_to_async(event_record)(type="suggestion.created", data={"n": n}, folder_id=None)
        for n in range(5)
    ]
    deliverer = WebhookDeliverer(changes=False)
    try:
        assert await deliverer.drain() == 5
        counts = await sync_to_async(webhook_delivery_counts)()
        assert (counts.deliveries_pending, counts.attempts_failed, counts.endpoints_failing) == (5, 5, 1)
        # /metrics reads the same numbers from the rows.
        selectors._counts_read = None
        scraped = await sync_to_async(scraped_values)()
        assert scraped["lensrelay_webhook_deliveries_pending"] == 5.0
        assert scraped["lensrelay_webhook_attempts_failed"] == 5.0
        assert scraped["lensrelay_webhook_endpoints_failing"] == 1.0
        receiver.start()  # up again, same port
        for _ in range(200):
            await deliverer.drain()
            if len(receiver.ids()) == 5:
                break
            await asyncio.sleep(0.05)
    finally:
        await deliverer.close()
    assert receiver.refused == []
    assert receiver.ids() == {e.msg_id for e in recorded if e is not None}
    assert sorted(r.data["n"] for r in receiver.received) == [0, 1, 2, 3, 4]
    counts = await sync_to_async(webhook_delivery_counts)()
    assert (counts.deliveries_pending, counts.deliveries_delivered, counts.endpoints_failing) == (0, 5, 0)


async def test_a_test_event_reaches_its_endpoint_only(receiver: Receiver) -> None:
    other = Receiver().start()
    try:
        mine = await sync_to_async(hook)(receiver)
        await sync_to_async(hook)(other)
        await sync_to_async(endpoint_send_test)(endpoint=mine, user=None)
        deliverer = WebhookDeliverer(changes=False)
        try:
            await deliverer.drain()
        finally:
            await deliverer.close()
        assert [r.type for r in receiver.received] == [TEST_EVENT]
        assert other.received == []
    finally:
        other.stop()


# -- document.changed from the log -------------------------------------------------------------------------


def test_the_change_follower_starts_at_the_log_end_debounces_and_survives_a_restart(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_DEBOUNCE_SECONDS = 60.0
    a, _ = folders()
    endpoint = WebhookEndpoint.objects.create(name="e", url="http://127.0.0.1:9/", all_folders=True)
    assert "document.changed" in endpoint.event_types
    doc = Document.objects.create(folder=a, uuid="u1", doc_id="relay-u1", path="/Note.md")
    YUpdate.objects.create(doc_id=doc.doc_id, data=b"", author="before")  # history: never told
    follower = ChangeFollower()
    assert follower.step() == 0 and WebhookEvent.objects.count() == 0
    YUpdate.objects.create(doc_id=doc.doc_id, data=b"", author="ada")
    assert follower.step() == 1
    event = WebhookEvent.objects.get()
    assert (event.type, event.released, event.data["authors"], event.data["user_path"]) == (
        "document.changed",
        False,
        ["ada"],
        "A/Note.md",
    )
    first_due = event.not_before
    YUpdate.objects.create(doc_id=doc.doc_id, data=b"", author="bob")
    assert follower.step() == 1
    event.refresh_from_db()
    assert event.data["authors"] == ["ada", "bob"] and event.not_before >= first_due
    assert events_release() == 0  # still waiting for the typing to pause
    assert events_release(now=timezone.now() + timedelta(seconds=61)) == 1
    # A restart reads the window below its cursor again: nothing already told is told twice.
    again = ChangeFollower()
    assert again.step() == 0 and WebhookEvent.objects.count() == 1
    YUpdate.objects.create(doc_id=doc.doc_id, data=b"", author="cy")
    assert again.step() == 1 and WebhookEvent.objects.count() == 2


def test_the_change_follower_waits_at_most_ten_periods(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_DEBOUNCE_SECONDS = 1.0
    a, _ = folders()
    WebhookEndpoint.objects.create(name="e", url="http://127.0.0.1:9/", all_folders=True)
    doc = Document.objects.create(folder=a, uuid="u1", doc_id="relay-u1", path="/Note.md")
    follower = ChangeFollower()
    follower.step()
    YUpdate.objects.create(doc_id=doc.doc_id, data=b"")
    follower.step()
    event = WebhookEvent.objects.get()
    WebhookEvent.objects.filter(pk=event.pk).update(created=timezone.now() - timedelta(seconds=30))
    YUpdate.objects.create(doc_id=doc.doc_id, data=b"")
    follower.step()
    event.refresh_from_db()
    assert event.not_before <= event.created + timedelta(seconds=10)
    assert events_release() == 1


def test_the_change_follower_moves_on_without_endpoints_and_keeps_its_cursor_now_and_then() -> None:
    a, _ = folders()
    doc = Document.objects.create(folder=a, uuid="u1", doc_id="relay-u1", path="/Note.md")
    clock = [0.0]
    follower = ChangeFollower(clock=lambda: clock[0])
    follower.step()
    started = cursor_load(name=CURSOR_NAME)
    row = YUpdate.objects.create(doc_id=doc.doc_id, data=b"")
    assert follower.step() == 0 and WebhookEvent.objects.count() == 0
    assert follower.cursor == row.pk and cursor_load(name=CURSOR_NAME) == started
    clock[0] = IDLE_SAVE_SECONDS
    follower.step()
    assert cursor_load(name=CURSOR_NAME) == row.pk


def test_an_idle_pass_takes_no_write_lock() -> None:
    """Nobody listening and nothing due: the delivery loop's pass only reads (on SQLite every transaction,
    even one that writes nothing, takes the write lock the live path's update log needs)."""
    a, _ = folders()
    doc = Document.objects.create(folder=a, uuid="u1", doc_id="relay-u1", path="/Note.md")
    follower = ChangeFollower()
    follower.step()
    YUpdate.objects.create(doc_id=doc.doc_id, data=b"")
    with CaptureQueriesContext(connection) as queries:
        follower.step()
        assert events_release() == 0
        assert deliveries_claim(limit=4) == []
    statements = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    assert statements and set(statements) == {"SELECT"}, statements


async def _passes_in_half_a_second(deliverer: WebhookDeliverer) -> int:
    count = 0
    step = deliverer.step

    async def counted() -> int:
        nonlocal count
        count += 1
        return await step()

    deliverer.step = counted  # type: ignore[method-assign]
    stop = asyncio.Event()
    running = asyncio.create_task(deliverer.run(stop=stop))
    try:
        await asyncio.sleep(0.5)
    finally:
        stop.set()
        await running
        await deliverer.close()
    return count


async def test_with_no_enabled_endpoint_the_loop_looks_less_often(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its queries twice a second for nobody were a constant cost of the derive process (issue 36)."""
    monkeypatch.setattr(delivery, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(delivery, "IDLE_POLL_SECONDS", 30.0)
    nobody = WebhookDeliverer()
    assert await _passes_in_half_a_second(nobody) == 1
    assert nobody.idle
    await sync_to_async(hook)(receiver)
    listened = WebhookDeliverer()
    assert await _passes_in_half_a_second(listened) > 5
    assert not listened.idle


def test_with_a_listener_a_pass_with_no_news_takes_no_write_lock(receiver: Receiver) -> None:
    hook(receiver, event_types=["document.changed"])
    follower = ChangeFollower()
    follower.step()
    with CaptureQueriesContext(connection) as queries:
        assert follower.step() == 0
    statements = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    assert set(statements) == {"SELECT"}, statements


def test_old_delivered_events_are_pruned_and_pending_ones_kept(receiver: Receiver) -> None:
    endpoint, event = one_delivery(receiver)
    other = event_record(type="suggestion.created", data={}, folder_id=None)
    assert other is not None
    events_release()
    WebhookDelivery.objects.filter(event=event).update(status="delivered")
    WebhookEvent.objects.update(created=timezone.now() - timedelta(days=31))
    webhook_rows_prune()
    assert list(WebhookEvent.objects.values_list("pk", flat=True)) == [other.pk]
    assert endpoint.pk


def test_webhooks_deliver_once_sends_what_is_due_and_reports(receiver: Receiver) -> None:
    hook(receiver)
    event = event_record(type="suggestion.created", data={"n": 1}, folder_id=None)
    assert event is not None
    out = StringIO()
    call_command("webhooks_deliver", "--once", stdout=out)
    assert receiver.ids() == {event.msg_id} and receiver.refused == []
    assert "Webhook attempts made: 1. Pending deliveries: 0, delivered: 1" in out.getvalue()
