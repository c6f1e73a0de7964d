"""Reading the webhook rows: delivery counts (for monitoring) and an endpoint's recent deliveries."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

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


def endpoint_recent_deliveries(*, endpoint: WebhookEndpoint, limit: int = 20) -> list[WebhookDelivery]:
    return list(
        WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event").order_by("-id")[:limit]
    )
