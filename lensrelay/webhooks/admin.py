"""Admin for webhooks: endpoints (URL checked, secret shown only to superusers, test event, resume) and the
read-only delivery log with each attempt's answer. Thin: the services in `endpoints.py` do the work.

Registered by `lensrelay/admin.py`, which imports this module.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from lensrelay.adminbase import ModelAdmin
from lensrelay.webhooks.endpoints import EndpointInvalid, endpoint_check, endpoint_resume, endpoint_send_test
from lensrelay.webhooks.guard import UrlRefused, check_url
from lensrelay.webhooks.models import (
    SECRET_PREFIX,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    all_event_types,
)
from lensrelay.webhooks.selectors import endpoint_recent_deliveries


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https", help_text="The http(s) URL events go to.")
    event_types = forms.MultipleChoiceField(
        choices=[(t, t) for t in all_event_types()],
        widget=forms.CheckboxSelectMultiple,
        initial=all_event_types,
        help_text="The events this endpoint receives.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("name", "url", "event_types", "folders", "all_folders", "enabled")
        labels = {"folders": "Folders", "all_folders": "All folders"}
        help_texts = {
            "folders": "It receives only the events of these folders. None selected and “All folders” off: "
            "it receives nothing of any folder.",
        }

    def clean_url(self) -> str:
        url: str = self.cleaned_data["url"]
        try:
            check_url(url)
        except UrlRefused as exc:
            raise forms.ValidationError(str(exc)) from None
        return url

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "url" in cleaned and "event_types" in cleaned:
            try:
                endpoint_check(
                    url=cleaned["url"],
                    event_types=cleaned["event_types"],
                    folders=cleaned.get("folders") or [],
                    all_folders=bool(cleaned.get("all_folders")),
                )
            except (EndpointInvalid, UrlRefused) as exc:
                raise forms.ValidationError(str(exc)) from None
        return cleaned


def _status(endpoint: WebhookEndpoint) -> str:
    if not endpoint.enabled:
        return "disabled"
    if endpoint.paused_at is not None:
        return "paused"
    if endpoint.failing_since is not None:
        return f"failing since {endpoint.failing_since:%Y-%m-%d %H:%M} UTC"
    return "active"


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ModelAdmin):
    form = WebhookEndpointForm
    list_display = ("name", "url", "status", "scope", "pending")
    list_filter = ("enabled", ("paused_at", admin.EmptyFieldListFilter))
    search_fields = ("name", "url")
    secret_fields = ("secret",)
    filter_horizontal = ("folders",)
    actions = ("send_test_event", "resume_selected")
    STATE = ("status", "paused_reason", "paused_at", "failing_since")

    def _secret_field(self, request: HttpRequest) -> str:
        return "secret_full" if getattr(request.user, "is_superuser", False) else "secret_masked"

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:  # type: ignore[override]
        fields = ["name", "url", "event_types", "folders", "all_folders", "enabled"]
        if obj is None:
            return fields
        return [*fields, *self.STATE, self._secret_field(request), "created", "log"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return (*self.STATE, self._secret_field(request), "created", "log") if obj is not None else ()

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookEndpoint]:
        return super().get_queryset(request).prefetch_related("folders")

    @admin.display(description="Status")
    def status(self, obj: WebhookEndpoint) -> SafeString:
        if obj.paused_at is not None:
            return format_html('<strong class="webhook-paused">paused</strong> — {}', obj.paused_reason)
        return format_html("{}", _status(obj))

    @admin.display(description="Folders")
    def scope(self, obj: WebhookEndpoint) -> str:
        if obj.all_folders:
            return "all folders"
        return ", ".join(f.name for f in obj.folders.all()) or "none (receives no folder's events)"

    @admin.display(description="Pending deliveries")
    def pending(self, obj: WebhookEndpoint) -> int:
        return obj.deliveries.filter(status=WebhookDelivery.Status.PENDING).count()

    # Which of the two a page shows is chosen per request (never kept on this shared instance).
    @admin.display(description="Signing secret")
    def secret_full(self, obj: WebhookEndpoint) -> SafeString:
        return format_html('<code id="webhook-secret">{}</code>', obj.secret)

    @admin.display(description="Signing secret")
    def secret_masked(self, obj: WebhookEndpoint) -> SafeString:
        shown = SECRET_PREFIX + obj.secret[len(SECRET_PREFIX) :][:4]
        return format_html(
            '<code id="webhook-secret-masked">{}…</code> (only superusers see it whole)', shown
        )

    @admin.display(description="Recent deliveries")
    def log(self, obj: WebhookEndpoint) -> SafeString:
        rows = [
            (
                reverse("admin:lensrelay_webhookdelivery_change", args=[d.pk]),
                f"{d.event.type} {d.event.msg_id}",
                d.get_status_display(),
                d.attempts,
                d.last_status_code if d.last_status_code is not None else (d.last_error[:80] or "—"),
            )
            for d in endpoint_recent_deliveries(endpoint=obj)
        ]
        if not rows:
            return format_html('<span class="quiet">{}</span>', "Nothing delivered yet.")
        items = format_html_join("", '<li><a href="{}">{}</a>: {}, {} attempt(s), last answer {}</li>', rows)
        return format_html("<ul>{}</ul>", items)

    def response_add(
        self, request: HttpRequest, obj: WebhookEndpoint, post_url_continue: str | None = None
    ) -> HttpResponse:
        self.message_user(
            request,
            "Endpoint created with a new signing secret; superusers see it on the endpoint's page.",
            messages.INFO,
        )
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description="Send a test event to selected endpoints", permissions=["change"])
    def send_test_event(
        self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]
    ) -> HttpResponse | None:
        endpoints = list(queryset)
        if request.POST.get("post") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Send a test event?",
                "endpoints": endpoints,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(
                request, "admin/lensrelay/webhookendpoint/send_test_confirmation.html", context
            )
        for endpoint in endpoints:
            event = endpoint_send_test(endpoint=endpoint, user=request.user)
            self.log_change(request, endpoint, f"Sent a test event ({event.msg_id}).")
        paused = [e.name for e in endpoints if e.paused_at is not None or not e.enabled]
        self.message_user(request, f"Queued a test event for {len(endpoints)} endpoint(s).", messages.SUCCESS)
        if paused:
            self.message_user(
                request,
                f"Paused or disabled, so not sent until resumed or enabled: {', '.join(paused)}.",
                messages.WARNING,
            )
        return None

    @admin.action(description="Resume selected paused endpoints", permissions=["change"])
    def resume_selected(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        resumed = 0
        for endpoint in queryset.filter(paused_at__isnull=False):
            due = endpoint_resume(endpoint=endpoint)
            self.log_change(request, endpoint, f"Resumed; {due} waiting deliveries due now.")
            resumed += 1
        self.message_user(request, f"Resumed {resumed} endpoint(s).", messages.SUCCESS)


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    fields = (
        "number",
        "started",
        "status_code",
        "duration_ms",
        "error",
        "response_excerpt",
        "next_attempt_at",
    )
    readonly_fields = fields
    can_delete = False
    ordering = ("-number",)
    max_num = 0

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ModelAdmin):
    list_display = (
        "event_type",
        "msg_id",
        "endpoint",
        "status",
        "attempts",
        "last_status_code",
        "last_attempt_at",
        "next_attempt",
    )
    list_filter = ("status", "endpoint", "event__type")
    list_select_related = ("event", "endpoint")
    search_fields = ("event__msg_id", "event__doc_id")
    inlines = (WebhookAttemptInline,)
    fields = (
        "endpoint",
        "event_type",
        "msg_id",
        "status",
        "attempts",
        "created",
        "delivered_at",
        "last_attempt_at",
        "next_attempt",
        "last_status_code",
        "last_duration_ms",
        "last_error",
        "last_response_shown",
        "payload",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Event", ordering="event__type")
    def event_type(self, obj: WebhookDelivery) -> str:
        return obj.event.type

    @admin.display(description="webhook-id")
    def msg_id(self, obj: WebhookDelivery) -> str:
        return obj.event.msg_id

    @admin.display(description="Next attempt")
    def next_attempt(self, obj: WebhookDelivery) -> str:
        if obj.status == WebhookDelivery.Status.DELIVERED:
            return "—"
        if obj.endpoint.paused_at is not None:
            return "when the endpoint is resumed"
        return f"{obj.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC"

    @admin.display(description="Last response")
    def last_response_shown(self, obj: WebhookDelivery) -> SafeString:
        return format_html(
            '<pre style="white-space: pre-wrap; max-width: 60em">{}</pre>', obj.last_response or "—"
        )

    @admin.display(description="Payload")
    def payload(self, obj: WebhookDelivery) -> SafeString:
        shown = json.dumps(obj.event.data, indent=2, ensure_ascii=False)
        return format_html('<pre style="white-space: pre-wrap; max-width: 60em">{}</pre>', shown)
