"""Managing endpoints: create and change them (their URL checked), resume a paused one, send a test event."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from lensrelay.models import Folder
from lensrelay.webhooks.guard import check_url
from lensrelay.webhooks.models import (
    TEST_EVENT,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
    all_event_types,
)


class EndpointInvalid(ValueError):
    """An endpoint that cannot be saved; the message says why. Nothing was changed."""


def _clean_types(event_types: Iterable[str]) -> list[str]:
    known = all_event_types()
    types = [str(t) for t in event_types]
    unknown = sorted(set(types) - set(known))
    if unknown:
        raise EndpointInvalid(f"Unknown event types: {', '.join(unknown)}.")
    if not types:
        raise EndpointInvalid("Pick at least one event type.")
    return [t for t in known if t in types]


def _check(*, url: str, folders: list[Folder], all_folders: bool) -> None:
    check_url(url)  # raises UrlRefused (a ValueError) with the reason
    if not folders and not all_folders:
        raise EndpointInvalid("Give it folders, or tick all folders: an endpoint sees no folder by default.")


def endpoint_create(
    *,
    name: str,
    url: str,
    event_types: Iterable[str] | None = None,
    folders: Iterable[Folder] = (),
    all_folders: bool = False,
) -> WebhookEndpoint:
    """A new endpoint with a fresh secret. Raises EndpointInvalid or UrlRefused."""
    folder_list = list(folders)
    _check(url=url, folders=folder_list, all_folders=all_folders)
    types = _clean_types(all_event_types() if event_types is None else event_types)
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.create(
            name=name.strip()[:200] or url[:200], url=url, event_types=types, all_folders=all_folders
        )
        endpoint.folders.set(folder_list)
    return endpoint


def endpoint_check(
    *, url: str, event_types: Iterable[str], folders: Iterable[Folder], all_folders: bool
) -> None:
    """What `endpoint_create` checks, for forms that save the row themselves."""
    _check(url=url, folders=list(folders), all_folders=all_folders)
    _clean_types(event_types)


def endpoint_resume(*, endpoint: WebhookEndpoint) -> int:
    """Unpause an endpoint: what waited for it is due now. Returns how many deliveries are due."""
    with transaction.atomic():
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
            paused_at=None, paused_reason="", failing_since=None
        )
        due = WebhookDelivery.objects.filter(endpoint=endpoint, status=WebhookDelivery.Status.PENDING).update(
            next_attempt_at=timezone.now()
        )
    endpoint.paused_at, endpoint.paused_reason, endpoint.failing_since = None, "", None
    return due


def endpoint_send_test(*, endpoint: WebhookEndpoint, user: Any) -> WebhookEvent:
    """Queue a `webhook.test` event for this endpoint alone (delivered like any other)."""
    now = timezone.now()
    who = user.get_username() if getattr(user, "pk", None) else ""
    return WebhookEvent.objects.create(
        type=TEST_EVENT,
        data={"endpoint": endpoint.name, "requested_by": who},
        endpoint=endpoint,
        created=now,
        not_before=now,
    )
