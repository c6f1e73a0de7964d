"""The webhook admin: endpoints are created with checked URLs and explicit folders, the secret is whole only
for superusers, the test-event and resume actions confirm, act, tell and log, need the change permission,
and the delivery log is read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from lensrelay.models import Folder
from lensrelay.webhooks.delivery import events_release
from lensrelay.webhooks.models import (
    TEST_EVENT,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)

pytestmark = pytest.mark.django_db(transaction=True)

ADD = "/admin/lensrelay/webhookendpoint/add/"
LIST = "/admin/lensrelay/webhookendpoint/"
DELIVERIES = "/admin/lensrelay/webhookdelivery/"


@pytest.fixture(autouse=True)
def _public_only(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = False


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root(transactional_db: None) -> Client:
    return signed_in(User.objects.create_superuser("root", "root@example.org", "pw"))


def staff(name: str, *codenames: str) -> Client:
    user = User.objects.create_user(name, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return signed_in(user)


def endpoint(**kwargs: Any) -> WebhookEndpoint:
    kwargs.setdefault("all_folders", True)
    return WebhookEndpoint.objects.create(name="hook", url="https://93.184.215.14/hook", **kwargs)


def form(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "git sync",
        "url": "https://93.184.215.14/hook",
        "event_types": ["suggestion.decided", "document.changed"],
        "folders": [],
        "enabled": "on",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_a_superuser_creates_an_endpoint_and_sees_its_secret(root: Client) -> None:
    folder = Folder.objects.create(name="Team")
    response = root.post(ADD, form(folders=[folder.pk]), follow=True)
    assert response.status_code == 200, response.content.decode()[:2000]
    made = WebhookEndpoint.objects.get()
    assert made.event_types == ["suggestion.decided", "document.changed"]
    assert list(made.folders.values_list("name", flat=True)) == ["Team"] and not made.all_folders
    page = root.get(f"{LIST}{made.pk}/change/").content.decode()
    assert made.secret in page and made.secret.startswith("whsec_")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://0x7f000001/",
        "http://localhost:8000/",
        "ftp://93.184.215.14/",
        "http://user:pw@93.184.215.14/",
    ],
)
def test_hostile_urls_are_refused_by_the_form_and_nothing_is_saved(root: Client, url: str) -> None:
    response = root.post(ADD, form(url=url, all_folders="on"))
    assert response.status_code == 200
    assert "errornote" in response.content.decode() or "errorlist" in response.content.decode()
    assert WebhookEndpoint.objects.count() == 0


def test_an_endpoint_without_folders_or_all_folders_is_refused(root: Client) -> None:
    response = root.post(ADD, form())
    assert response.status_code == 200 and "no folder by default" in response.content.decode()
    response = root.post(ADD, form(all_folders="on", event_types=["document.nuked"]))
    assert response.status_code == 200 and WebhookEndpoint.objects.count() == 0


def test_staff_with_change_permission_see_only_the_start_of_the_secret(transactional_db: None) -> None:
    hook = endpoint()
    client = staff("rita", "view_webhookendpoint", "change_webhookendpoint")
    page = client.get(f"{LIST}{hook.pk}/change/").content.decode()
    assert hook.secret not in page and hook.secret[:10] in page
    assert "only superusers see it whole" in page


def test_staff_without_permission_are_refused_everything(transactional_db: None) -> None:
    hook = endpoint()
    client = staff("nobody")
    assert client.get(LIST).status_code == 403
    assert client.get(f"{LIST}{hook.pk}/change/").status_code in (302, 403)
    assert client.post(ADD, form(all_folders="on")).status_code == 403
    response = client.post(LIST, {"action": "send_test_event", "_selected_action": [hook.pk], "post": "yes"})
    assert response.status_code == 403
    assert client.get(DELIVERIES).status_code == 403
    assert WebhookEvent.objects.count() == 0 and WebhookEndpoint.objects.count() == 1


def test_anonymous_visitors_are_sent_to_the_login(transactional_db: None) -> None:
    hook = endpoint()
    response = Client().post(
        LIST, {"action": "send_test_event", "_selected_action": [hook.pk], "post": "yes"}
    )
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert WebhookEvent.objects.count() == 0


def test_view_only_staff_cannot_send_test_events_or_resume(transactional_db: None) -> None:
    hook = endpoint(paused_at=timezone.now(), paused_reason="down")
    client = staff("viewer", "view_webhookendpoint")
    assert client.get(LIST).status_code == 200
    for action in ("send_test_event", "resume_selected"):
        client.post(LIST, {"action": action, "_selected_action": [hook.pk], "post": "yes"})
    hook.refresh_from_db()
    assert WebhookEvent.objects.count() == 0 and hook.paused_at is not None


def test_send_test_event_confirms_then_queues_logs_and_tells(transactional_db: None) -> None:
    hook = endpoint()
    client = staff("rita", "view_webhookendpoint", "change_webhookendpoint")
    confirm = client.post(LIST, {"action": "send_test_event", "_selected_action": [hook.pk]})
    assert confirm.status_code == 200 and "confirm-send-test" in confirm.content.decode()
    assert WebhookEvent.objects.count() == 0
    done = client.post(
        LIST, {"action": "send_test_event", "_selected_action": [hook.pk], "post": "yes"}, follow=True
    )
    assert "Queued a test event for 1 endpoint" in done.content.decode()
    event = WebhookEvent.objects.get()
    assert (event.type, event.endpoint_id, event.data["requested_by"]) == (TEST_EVENT, hook.pk, "rita")
    entry = LogEntry.objects.get(object_id=str(hook.pk))
    assert entry.user.username == "rita" and event.msg_id in entry.change_message


def test_resume_unpauses_logs_and_tells(transactional_db: None) -> None:
    hook = endpoint(paused_at=timezone.now(), paused_reason="Paused automatically: every attempt failed")
    client = staff("rita", "view_webhookendpoint", "change_webhookendpoint")
    listing = client.get(LIST).content.decode()
    assert "Paused automatically: every attempt failed" in listing
    done = client.post(LIST, {"action": "resume_selected", "_selected_action": [hook.pk]}, follow=True)
    assert "Resumed 1 endpoint" in done.content.decode()
    hook.refresh_from_db()
    assert hook.paused_at is None and hook.paused_reason == ""
    assert "Resumed" in LogEntry.objects.get(object_id=str(hook.pk)).change_message


def test_the_delivery_log_is_read_only_and_shows_the_last_answer(root: Client) -> None:
    hook = endpoint()
    WebhookEvent.objects.create(type="suggestion.created", data={"suggestion": {"id": "x"}})
    events_release()
    delivery = WebhookDelivery.objects.get()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        attempts=1, last_status_code=502, last_response="<b>bad gateway</b>", last_error="HTTP 502"
    )
    WebhookAttempt.objects.create(
        delivery=delivery, number=1, status_code=502, response_excerpt="<b>bad gateway</b>"
    )
    page = root.get(f"{DELIVERIES}{delivery.pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "&lt;b&gt;bad gateway&lt;/b&gt;" in text and "<b>bad gateway</b>" not in text
    assert delivery.event.msg_id in text
    assert root.get(f"{DELIVERIES}add/").status_code == 403
    before = WebhookDelivery.objects.get().last_status_code
    root.post(f"{DELIVERIES}{delivery.pk}/change/", {"status": "delivered"})
    assert WebhookDelivery.objects.get().last_status_code == before == 502
    assert WebhookDelivery.objects.get().status == "pending"
    assert root.post(f"{DELIVERIES}{delivery.pk}/delete/", {"post": "yes"}).status_code == 403
    assert WebhookDelivery.objects.filter(pk=delivery.pk).exists() and hook.pk
