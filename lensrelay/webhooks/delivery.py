"""Delivering the outbox, at least once: fan events out to endpoints, claim what is due, POST it, record
the attempt, retry with backoff, pause an endpoint that has failed for too long.

The rows are the whole state. An event is fanned out (one `WebhookDelivery` per endpoint that wants it)
in one transaction; a delivery is claimed by moving its `next_attempt_at` past the attempt's timeout, so a
process killed mid-attempt leaves it to come due again by itself, under the same message id; an attempt's
outcome, the delivery's new state and the endpoint's failing/paused state are written in one transaction.
Receivers therefore see every event at least once and must drop repeats by `webhook-id`.

`WebhookDeliverer` runs this in the derive process (`manage.py derive`, started beside the server) or in
`manage.py webhooks_deliver`: its own database thread and a few sending threads, so neither a slow
receiver nor the derived views hold the other up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from lensrelay.docstore.store import keep_connection_healthy
from lensrelay.webhooks.changes import ChangeFollower
from lensrelay.webhooks.models import (
    TEST_EVENT,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from lensrelay.webhooks.sending import SendResult, body_of, post_event

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Attempts in flight at once, events fanned out per pass, and how often the loop looks for work.
CONCURRENCY = 8
RELEASE_BATCH = 500
POLL_SECONDS = 0.5
# The loop's passes while no endpoint is enabled: the derive process ran its five queries twice a second
# for nobody (issue 36). An endpoint enabled meanwhile hears of what happened since the pass before it was,
# and its first event waits in the outbox at most this long.
IDLE_POLL_SECONDS = 2.0
# A claim outlives the attempt's timeout by this much before the delivery is due again.
CLAIM_MARGIN_SECONDS = 5.0
PRUNE_EVERY_SECONDS = 3600.0
_RNG = random.Random()


# -- backoff ---------------------------------------------------------------------------------------------


def retry_delay(attempt: int, *, rng: random.Random | None = None) -> float:
    """Seconds before the next try after the `attempt`-th failure: doubling from the base, capped, with
    "equal jitter" (between half and all of it) so endpoints that failed together do not retry together."""
    base = float(settings.LENSRELAY_WEBHOOK_RETRY_BASE_SECONDS)
    cap = float(settings.LENSRELAY_WEBHOOK_RETRY_MAX_SECONDS)
    exponent = min(max(attempt, 1) - 1, 60)
    delay = min(cap, base * (2**exponent))
    return delay / 2 + (rng or _RNG).uniform(0, delay / 2)


# -- fan-out ---------------------------------------------------------------------------------------------


def endpoint_wants(endpoint: WebhookEndpoint, event: WebhookEvent, folder_ids: set[int]) -> bool:
    """Whether the event is for this endpoint: its type, and every folder the event names among the
    endpoint's (an event naming no folder goes only to endpoints given all folders)."""
    if event.endpoint_id is not None:
        return event.endpoint_id == endpoint.pk
    if event.type == TEST_EVENT or event.type not in (endpoint.event_types or []):
        return False
    if endpoint.all_folders:
        return True
    if event.folder_id is None:
        return False
    return event.folder_id in folder_ids and (
        event.other_folder_id is None or event.other_folder_id in folder_ids
    )


def events_release(*, now: datetime | None = None, limit: int = RELEASE_BATCH) -> int:
    """Fan due events out into deliveries, in one transaction; returns how many events were released."""
    now = now or timezone.now()
    due = WebhookEvent.objects.filter(released=False, not_before__lte=now)
    # Looked at first without a transaction: on SQLite every transaction takes the database's one write
    # lock, which the live path's update log waits for, and this runs twice a second with nothing due.
    if not due.exists():
        return 0
    with transaction.atomic():
        events = list(due.select_for_update().order_by("id")[:limit])
        if not events:
            return 0
        endpoints = [
            (endpoint, {folder.pk for folder in endpoint.folders.all()})
            for endpoint in WebhookEndpoint.objects.filter(enabled=True).prefetch_related("folders")
        ]
        rows = [
            WebhookDelivery(event=event, endpoint=endpoint, next_attempt_at=now, created=now)
            for event in events
            if event.endpoint_id is None
            for endpoint, folder_ids in endpoints
            if endpoint_wants(endpoint, event, folder_ids)
        ]
        # A test event goes to its endpoint even while that is disabled: it is sent once enabled again.
        rows += [
            WebhookDelivery(event=event, endpoint_id=event.endpoint_id, next_attempt_at=now, created=now)
            for event in events
            if event.endpoint_id is not None
        ]
        WebhookDelivery.objects.bulk_create(rows, ignore_conflicts=True)
        WebhookEvent.objects.filter(pk__in=[event.pk for event in events]).update(released=True)
    return len(events)


# -- claiming and recording ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    delivery_id: int
    endpoint_id: int
    url: str
    secret: str
    msg_id: str
    body: str


def _timeout() -> float:
    return float(settings.LENSRELAY_WEBHOOK_TIMEOUT_SECONDS)


def deliveries_claim(*, limit: int, now: datetime | None = None) -> list[Claimed]:
    """Claim up to `limit` due deliveries of enabled, unpaused endpoints."""
    now = now or timezone.now()
    lease = now + timedelta(seconds=_timeout() + CLAIM_MARGIN_SECONDS)
    due = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING,
            next_attempt_at__lte=now,
            endpoint__enabled=True,
            endpoint__paused_at__isnull=True,
        )
        .order_by("next_attempt_at", "id")
        .values_list("pk", "next_attempt_at")[:limit]
    )
    claimed: list[Claimed] = []
    for pk, due_at in due:
        # Conditional: of two loops (a second process by mistake) only one gets each delivery.
        won = WebhookDelivery.objects.filter(
            pk=pk, status=WebhookDelivery.Status.PENDING, next_attempt_at=due_at
        ).update(next_attempt_at=lease)
        if not won:
            continue
        row = WebhookDelivery.objects.select_related("event", "endpoint").get(pk=pk)
        event = row.event
        claimed.append(
            Claimed(
                delivery_id=pk,
                endpoint_id=row.endpoint_id,
                url=row.endpoint.url,
                secret=row.endpoint.secret,
                msg_id=event.msg_id,
                body=body_of(type=event.type, created=event.created, data=event.data),
            )
        )
    return claimed


def _failure_summary(result: SendResult) -> str:
    if result.status_code is not None:
        return f"HTTP {result.status_code}" + (f" ({result.error})" if result.error else "")
    return result.error or "no answer"


def attempt_record(
    *, claimed: Claimed, result: SendResult, started: datetime, now: datetime | None = None
) -> WebhookAttempt:
    """Write an attempt's outcome: the log row, the delivery's state, and the endpoint's failing or paused
    state, in one transaction."""
    now = now or timezone.now()
    pause_after = timedelta(seconds=float(settings.LENSRELAY_WEBHOOK_PAUSE_AFTER_SECONDS))
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().get(pk=claimed.delivery_id)
        number = delivery.attempts + 1
        already = delivery.status == WebhookDelivery.Status.DELIVERED
        next_at = None if result.ok or already else now + timedelta(seconds=retry_delay(number))
        attempt = WebhookAttempt.objects.create(
            delivery=delivery,
            number=number,
            started=started,
            status_code=result.status_code,
            response_excerpt=result.response_excerpt,
            error=result.error,
            duration_ms=result.duration_ms,
            next_attempt_at=next_at,
        )
        changes: dict[str, Any] = {
            "attempts": number,
            "last_attempt_at": started,
            "last_status_code": result.status_code,
            "last_response": result.response_excerpt,
            "last_error": result.error,
            "last_duration_ms": result.duration_ms,
        }
        if result.ok and not already:
            changes.update(status=WebhookDelivery.Status.DELIVERED, delivered_at=now, next_attempt_at=now)
        elif next_at is not None:
            changes["next_attempt_at"] = next_at
        WebhookDelivery.objects.filter(pk=delivery.pk).update(**changes)
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=claimed.endpoint_id)
        if result.ok:
            if endpoint.failing_since is not None:
                WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=None)
        else:
            failing_since = endpoint.failing_since or started
            update: dict[str, Any] = {"failing_since": failing_since}
            if endpoint.paused_at is None and now - failing_since >= pause_after:
                update.update(
                    paused_at=now,
                    paused_reason=(
                        f"Paused automatically: every attempt failed since {failing_since:%Y-%m-%d %H:%M:%S} "
                        f"UTC ({_hours(now - failing_since)}). Last attempt: {_failure_summary(result)}."
                    ),
                )
                logger.warning("webhook endpoint %s paused: failing since %s", endpoint.pk, failing_since)
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(**update)
    return attempt


def _hours(span: timedelta) -> str:
    hours = span.total_seconds() / 3600
    return f"{hours:.1f} hours" if hours >= 1 else f"{span.total_seconds():.0f} seconds"


def webhook_rows_prune(*, now: datetime | None = None) -> int:
    """Forget events older than LENSRELAY_WEBHOOK_RETENTION_DAYS that nothing still waits to deliver."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=float(settings.LENSRELAY_WEBHOOK_RETENTION_DAYS))
    old = WebhookEvent.objects.filter(released=True, created__lt=cutoff).exclude(
        deliveries__status=WebhookDelivery.Status.PENDING
    )
    deleted, _ = old.delete()
    return deleted


# -- the loop --------------------------------------------------------------------------------------------


class WebhookDeliverer:
    """Follows the log for `document.changed`, fans events out, and keeps up to CONCURRENCY attempts in
    flight. All database work runs on one thread of its own, in order."""

    def __init__(self, *, changes: bool = True) -> None:
        self._db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lensrelay-webhooks-db")
        self._http = ThreadPoolExecutor(max_workers=CONCURRENCY, thread_name_prefix="lensrelay-webhooks")
        self._changes = ChangeFollower() if changes else None
        self._inflight: dict[int, asyncio.Task[None]] = {}
        self._pruned_at = 0.0
        self.sent = 0
        self.idle = False  # the last pass found no enabled endpoint and nothing to send or wait for

    async def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def call() -> T:
            keep_connection_healthy()
            return fn(*args, **kwargs)

        return await asyncio.get_running_loop().run_in_executor(self._db, call)

    async def step(self) -> int:
        """One pass: record changes, release due events, start attempts for what is due. Returns how many
        attempts it started."""
        if self._changes is not None:
            await self.db(self._changes.step)
        while await self.db(events_release) == RELEASE_BATCH:
            pass
        if time.monotonic() - self._pruned_at > PRUNE_EVERY_SECONDS:
            self._pruned_at = time.monotonic()
            await self.db(webhook_rows_prune)
        room = CONCURRENCY - len(self._inflight)
        if room <= 0:
            self.idle = False
            return 0
        claimed = await self.db(deliveries_claim, limit=room)
        for item in claimed:
            task = asyncio.create_task(self._attempt(item), name=f"webhook-{item.delivery_id}")
            self._inflight[item.delivery_id] = task
            task.add_done_callback(functools.partial(self._done, item.delivery_id))
        self.idle = self._changes is not None and self._changes.nobody_listens and not self._inflight
        return len(claimed)

    def _done(self, delivery_id: int, _task: asyncio.Task[None]) -> None:
        self._inflight.pop(delivery_id, None)

    async def _attempt(self, item: Claimed) -> None:
        started = timezone.now()
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(
                self._http,
                lambda: post_event(
                    url=item.url, secret=item.secret, msg_id=item.msg_id, body=item.body, timeout=_timeout()
                ),
            )
            await self.db(attempt_record, claimed=item, result=result, started=started)
            self.sent += 1
        except Exception:
            # The claim runs out by itself: the delivery comes due again.
            logger.exception("webhook delivery %s could not be recorded", item.delivery_id)

    async def settled(self) -> None:
        """Wait for the attempts in flight."""
        while self._inflight:
            await asyncio.gather(*list(self._inflight.values()), return_exceptions=True)

    async def drain(self) -> int:
        """Work off everything due now (and what falls due meanwhile, waiting at most for attempts in
        flight); returns attempts made. For `webhooks_deliver --once` and tests."""
        before = self.sent
        while await self.step() or self._inflight:
            await self.settled()
        return self.sent - before

    async def run(self, *, stop: asyncio.Event | None = None, parent_pid: int | None = None) -> None:
        stop = stop or asyncio.Event()
        while not stop.is_set():
            if parent_pid is not None and os.getppid() != parent_pid:
                return
            try:
                await self.step()
            except Exception:
                logger.exception("webhook delivery pass failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=IDLE_POLL_SECONDS if self.idle else POLL_SECONDS)

    async def close(self) -> None:
        # Attempts in flight are left to their claims: a restart sends them again.
        for task in list(self._inflight.values()):
            task.cancel()
        await asyncio.gather(*list(self._inflight.values()), return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.db(connections.close_all)
        self._db.shutdown(wait=True)
        self._http.shutdown(wait=False, cancel_futures=True)
