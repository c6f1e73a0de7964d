"""The webhook tables: endpoints staff manage, the outbox of events, and each event's delivery per endpoint
with its attempts (the log the admin shows).

The outbox is the delivery state: a process killed at any point leaves rows that say what is still to be
sent, so a restarted loop sends it (at least once, under the same message id).
"""

from __future__ import annotations

import base64
import secrets
import uuid
from typing import ClassVar

from django.db import models
from django.utils import timezone

from lensrelay.models import Folder

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes in base64 (what `standardwebhooks` reads)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def new_message_id() -> str:
    """The `webhook-id` of an event: the same on every attempt, so receivers can drop repeats."""
    return f"msg_{uuid.uuid4().hex}"


class EventType(models.TextChoices):
    SUGGESTION_CREATED = "suggestion.created", "suggestion.created"
    SUGGESTION_DECIDED = "suggestion.decided", "suggestion.decided"
    SUGGESTION_REOPENED = "suggestion.reopened", "suggestion.reopened"
    SUGGESTION_REVERTED = "suggestion.reverted", "suggestion.reverted"
    DOCUMENT_CHANGED = "document.changed", "document.changed"
    DOCUMENT_MOVED = "document.moved", "document.moved"
    DOCUMENT_TRASHED = "document.trashed", "document.trashed"
    DOCUMENT_RESTORED = "document.restored", "document.restored"
    COMMENT_CREATED = "comment.created", "comment.created"
    COMMENT_RESOLVED = "comment.resolved", "comment.resolved"


# Sent only by the admin's "send test event", to the one endpoint it was asked for.
TEST_EVENT = "webhook.test"


def all_event_types() -> list[str]:
    return [str(value) for value in EventType.values]


class WebhookEndpoint(models.Model):
    """Where events go. Folder scope is explicit: no folders and no `all_folders` means no folder's events."""

    name = models.CharField(max_length=200)
    url = models.URLField(max_length=2000, help_text="http(s) URL the events are POSTed to")
    secret = models.CharField(max_length=100, default=new_secret, editable=False)
    event_types = models.JSONField(default=all_event_types, help_text="The event types it receives")
    folders = models.ManyToManyField(Folder, blank=True, related_name="webhook_endpoints")
    all_folders = models.BooleanField(
        default=False, help_text="Receive the events of every folder, including folders created later"
    )
    enabled = models.BooleanField(default=True, help_text="Off: nothing is sent to it, nothing queued")
    # Set by the delivery loop when every attempt failed for LENSRELAY_WEBHOOK_PAUSE_AFTER_SECONDS: events
    # are still queued for it, and sent once staff resume it.
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_reason = models.TextField(blank=True, default="")
    failing_since = models.DateTimeField(
        null=True, blank=True, help_text="First failed attempt since the last success"
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "lensrelay"
        verbose_name = "webhook endpoint"
        ordering: ClassVar = ["name", "pk"]

    def __str__(self) -> str:
        return self.name

    @property
    def paused(self) -> bool:
        return self.paused_at is not None


class WebhookEvent(models.Model):
    """One event in the outbox, recorded in the transaction of the change it tells of.

    `released` turns true when the event was fanned out into deliveries; until then `not_before` may move
    (a `document.changed` waiting for typing to pause). `folder_id` (and for a move between folders
    `other_folder_id`) is the scope: only endpoints given every folder it names receive it; an event that
    names no folder goes only to endpoints given all folders.
    """

    msg_id = models.CharField(max_length=40, unique=True, default=new_message_id, editable=False)
    type = models.CharField(max_length=40)
    data = models.JSONField(default=dict)
    folder_id = models.BigIntegerField(null=True, blank=True)
    other_folder_id = models.BigIntegerField(null=True, blank=True)
    doc_id = models.CharField(max_length=100, blank=True, default="", db_index=True)
    # For document.changed: the newest update-log id it covers.
    upto = models.BigIntegerField(default=0)
    # Set for a test event: only this endpoint gets it.
    endpoint = models.ForeignKey(
        WebhookEndpoint, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created = models.DateTimeField(default=timezone.now)
    not_before = models.DateTimeField(default=timezone.now)
    released = models.BooleanField(default=False)

    class Meta:
        app_label = "lensrelay"
        verbose_name = "webhook event"
        ordering: ClassVar = ["-id"]
        indexes: ClassVar = [
            models.Index(fields=["released", "not_before"]),
            models.Index(fields=["type", "doc_id"]),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.msg_id}"


class WebhookDelivery(models.Model):
    """An event on its way to one endpoint: pending until a 2xx answer, retried with backoff meanwhile."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # Also the claim: an attempt moves it past its own timeout, so a process killed mid-attempt leaves a
    # row that becomes due again by itself.
    next_attempt_at = models.DateTimeField(default=timezone.now)
    created = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_response = models.TextField(blank=True, default="")
    last_error = models.TextField(blank=True, default="")
    last_duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        app_label = "lensrelay"
        verbose_name = "webhook delivery"
        verbose_name_plural = "webhook deliveries"
        ordering: ClassVar = ["-id"]
        indexes: ClassVar = [models.Index(fields=["status", "next_attempt_at"])]
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="webhookdelivery_once_per_endpoint")
        ]

    def __str__(self) -> str:
        return f"{self.event} -> {self.endpoint}"


class WebhookAttempt(models.Model):
    """One HTTP attempt of a delivery, as it went."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    response_excerpt = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    duration_ms = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "lensrelay"
        verbose_name = "webhook attempt"
        ordering: ClassVar = ["-id"]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}"

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
