"""The admin's "Roll an assistant back" page: pick an assistant and a window, read the plan, confirm.

Django's confirm-then-act convention: a GET shows what would happen (nothing changes); the confirmation
POSTs back only the assistant and the window (the plan's end fixed to when it was shown), and the server
computes the plan again from them and acts on what is still in it (``suggestions.lifecycle.rollback``).
Anything else in the POST (a list of suggestion ids) is ignored. Needs the review permission, GET and POST
alike.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.db.models import Max
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from lensrelay.models import ApiToken
from suggestions.lifecycle.rollback import (
    RollbackError,
    RollbackPlan,
    assistant_rollback,
    assistant_rollback_plan,
)
from suggestions.models import Suggestion
from suggestions.permissions import can_review

SESSIONS_LISTED = 200
DEFAULT_WINDOW = timedelta(hours=24)
# What a datetime-local input sends (minutes or seconds), and the exact end the confirmation carries.
INPUT_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"]
EXACT = "%Y-%m-%dT%H:%M:%S.%f"
TOKEN, SESSION = "token:", "session:"


def assistant_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """Tokens, OAuth grants and the most recent MCP sessions that made suggestions (labels are escaped by
    the widget: names come from people and clients)."""
    tokens: list[tuple[str, str]] = []
    grants: list[tuple[str, str]] = []
    for token in ApiToken.objects.select_related("user").order_by("name", "pk"):
        if token.user_id is not None:
            person = token.user.get_username() if token.user is not None else "?"
            grants.append((f"{TOKEN}{token.pk}", f"{token.name} (OAuth grant #{token.pk} for {person})"))
        else:
            tokens.append((f"{TOKEN}{token.pk}", f"{token.name} (token #{token.pk})"))
    recent = (
        Suggestion.objects.exclude(session_id="")
        .values("session_id", "client_name", "token__name")
        .annotate(last=Max("created"))
        .order_by("-last")[:SESSIONS_LISTED]
    )
    sessions = [
        (
            f"{SESSION}{row['session_id']}",
            f"{row['client_name'] or 'a client'} via {row['token__name'] or 'a deleted token'}, "
            f"session {row['session_id'][:8]} (last suggestion {row['last']:%Y-%m-%d %H:%M} UTC)",
        )
        for row in recent
    ]
    return [("Tokens", tokens), ("OAuth grants", grants), ("MCP sessions", sessions)]


class RollbackForm(forms.Form):
    assistant = forms.ChoiceField(
        label="Assistant",
        # Not echoing the value: it comes from the request and may be anything, of any length.
        error_messages={"invalid_choice": "Choose one of the listed tokens, grants or sessions."},
    )
    since = forms.DateTimeField(
        label="From (UTC)",
        required=False,
        input_formats=INPUT_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}, format="%Y-%m-%dT%H:%M:%S"),
        help_text="Suggestions created from this time on; empty: from the start.",
    )
    until = forms.DateTimeField(
        label="Until (UTC)",
        required=False,
        input_formats=INPUT_FORMATS,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}, format="%Y-%m-%dT%H:%M:%S"),
        help_text="Suggestions created before this time; empty: until now.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["assistant"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "---------"), *assistant_choices()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since is not None and until is not None and since >= until:
            raise forms.ValidationError("The window must end after it starts.")
        return data

    def target(self) -> tuple[ApiToken | None, str]:
        """The chosen token (or grant), or session id."""
        value = str(self.cleaned_data["assistant"])
        if value.startswith(SESSION):
            return None, value[len(SESSION) :]
        return ApiToken.objects.select_related("user").get(pk=int(value[len(TOKEN) :])), ""


def exact(moment: datetime) -> str:
    """A time as the confirmation carries it: to the microsecond when it has them (the plan's end), else to
    the second (what a datetime-local input can show again)."""
    return moment.strftime(EXACT if moment.microsecond else "%Y-%m-%dT%H:%M:%S")


def _page_url(assistant: str, since: datetime | None, until: datetime | None) -> str:
    query = {"assistant": assistant}
    if since is not None:
        query["since"] = exact(since)
    if until is not None:
        query["until"] = exact(until)
    return f"{reverse('admin:suggestions_suggestion_rollback')}?{urlencode(query)}"


def _plan(form: RollbackForm) -> RollbackPlan:
    token, session_id = form.target()
    return assistant_rollback_plan(
        token=token,
        session_id=session_id,
        since=form.cleaned_data.get("since"),
        until=form.cleaned_data.get("until"),
    )


def rollback_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    if not can_review(request.user):
        raise PermissionDenied
    if request.method == "POST":
        return _confirmed(model_admin, request)
    chosen = "assistant" in request.GET
    form = (
        RollbackForm(request.GET)
        if chosen
        else RollbackForm(initial={"since": (timezone.now() - DEFAULT_WINDOW).replace(microsecond=0)})
    )
    plan: RollbackPlan | None = None
    problem = ""
    if chosen and form.is_valid():
        try:
            plan = _plan(form)
        except RollbackError as exc:
            problem = str(exc)
    opts = model_admin.opts
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "title": "Roll an assistant back",
        "opts": opts,
        "form": form,
        "plan": plan,
        "problem": problem,
        "exact_until": exact(plan.until) if plan is not None else "",
        "exact_since": exact(plan.since) if plan is not None and plan.since is not None else "",
        "media": model_admin.media + form.media,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, f"admin/{opts.app_label}/{opts.model_name}/rollback.html", context)


def _confirmed(model_admin: ModelAdmin[Suggestion], request: HttpRequest) -> HttpResponse:
    """Act on the plan computed again from the assistant and the window alone."""
    form = RollbackForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(f"{name}: {' '.join(str(m) for m in e)}" for name, e in form.errors.items())
        model_admin.message_user(request, f"Nothing was rolled back: {errors}", messages.ERROR)
        return redirect(reverse("admin:suggestions_suggestion_rollback"))
    since, until = form.cleaned_data.get("since"), form.cleaned_data.get("until")
    back = _page_url(str(form.cleaned_data["assistant"]), since, until)
    if until is None:
        # The confirmation always carries the end of the window it showed: without one, it would act on
        # suggestions made after the reviewer read the plan.
        model_admin.message_user(request, "Nothing was rolled back: the window has no end.", messages.ERROR)
        return redirect(back)
    try:
        plan = _plan(form)
    except RollbackError as exc:
        model_admin.message_user(request, f"Nothing was rolled back: {exc}", messages.ERROR)
        return redirect(back)
    if not plan.actionable:
        model_admin.message_user(
            request,
            f"Nothing was rolled back: {plan.assistant.label} has nothing pending or revertible "
            f"{plan.window}.",
            messages.WARNING,
        )
        return redirect(back)
    result = assistant_rollback(plan=plan, user=request.user)
    clean = not result.not_rejected and len(result.not_reverted) == len(plan.not_revertible)
    model_admin.message_user(request, result.summary, messages.SUCCESS if clean else messages.WARNING)
    for item in [*result.not_rejected, *result.not_reverted]:
        row = item.suggestion
        model_admin.message_user(
            request,
            f"Not rolled back: {row.get_kind_display().lower()} of {row.path} ({row.uid}): {item.reason}.",
            messages.WARNING,
        )
    return redirect(back)
