"""Reading the webhook rows: delivery counts (for monitoring) and an endpoint's recent deliveries."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db.models import Count, Q

from lensrelay.observability.scrape import scrape_gauge
from lensrelay.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent


@dataclass(frozen=True)
class DeliveryCounts:
    """Totals over the rows kept (LENSRELAY_WEBHOOK_RETENTION_DAYS): what a metrics exporter reads."""

    events_waiting: int  # recorded, not yet fanned out (a document.changed waiting for typing to pause)
    deliveries_pending: int
    deliveries_delivered: int
    attempts: int
    attempts_failed: int
    endpoints_paused: int
    endpoints_failing: int


def webhook_delivery_counts() -> DeliveryCounts:
    deliveries = WebhookDelivery.objects.aggregate(
        pending=Count("pk", filter=Q(status=WebhookDelivery.Status.PENDING)),
        delivered=Count("pk", filter=Q(status=WebhookDelivery.Status.DELIVERED)),
    )
    ok = Q(status_code__gte=200, status_code__lt=300)
    attempts = WebhookAttempt.objects.aggregate(all=Count("pk"), failed=Count("pk", filter=~ok))
    endpoints = WebhookEndpoint.objects.aggregate(
        paused=Count("pk", filter=Q(paused_at__isnull=False)),
        failing=Count("pk", filter=Q(failing_since__isnull=False)),
    )
    return DeliveryCounts(
        events_waiting=WebhookEvent.objects.filter(released=False).count(),
        deliveries_pending=deliveries["pending"],
        deliveries_delivered=deliveries["delivered"],
        attempts=attempts["all"],
        attempts_failed=attempts["failed"],
        endpoints_paused=endpoints["paused"],
        endpoints_failing=endpoints["failing"],
    )


_GAUGES = (
    (
        "events_waiting",
        "Webhook events recorded, not yet fanned out (a change waiting for typing to pause).",
    ),
    ("deliveries_pending", "Webhook deliveries not yet answered with 2xx (first tries and retries)."),
    ("deliveries_delivered", "Webhook deliveries answered with 2xx, among the rows kept."),
    ("attempts", "Webhook delivery attempts, among the rows kept."),
    (
        "attempts_failed",
        "Failed webhook delivery attempts (error status, timeout, no answer), among the rows kept.",
    ),
    ("endpoints_paused", "Webhook endpoints paused (a day of failures, or by staff)."),
    ("endpoints_failing", "Webhook endpoints whose last attempt failed."),
)
# One read serves every gauge of a scrape.
_COUNTS_FRESH_SECONDS = 1.0
_counts_read: tuple[float, DeliveryCounts] | None = None


def _counts_now() -> DeliveryCounts:
    global _counts_read
    if _counts_read is None or time.monotonic() - _counts_read[0] > _COUNTS_FRESH_SECONDS:
        _counts_read = (time.monotonic(), webhook_delivery_counts())
    return _counts_read[1]


def webhook_scrape_gauges_register() -> None:
    """`/metrics` reads the webhook numbers from the rows when scraped: the derive process delivers, and
    rows are what every worker agrees on."""
    for field, documentation in _GAUGES:
        scrape_gauge(
            name=f"lensrelay_webhook_{field}",
            documentation=documentation,
            read=lambda field=field: float(getattr(_counts_now(), field)),  # type: ignore[misc]
        )


def endpoint_recent_deliveries(*, endpoint: WebhookEndpoint, limit: int = 20) -> list[WebhookDelivery]:
    return list(
        WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event").order_by("-id")[:limit]
    )
