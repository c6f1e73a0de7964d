"""A person's email choice: at once, an hourly or a daily digest, or never (suggestions.lifecycle.emailing).
Each person sets only their own; the page says where their email goes, or that they have no address."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from lensrelay.access.auth import access_for_user
from suggestions.models import EmailChoice, Suggestion
from suggestions.permissions import can_review


def email_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest) -> HttpResponse:
    user = request.user
    if access_for_user(user) is None and not can_review(user):
        raise PermissionDenied
    user_id = int(user.pk or 0)  # signed in: the admin view saw to that
    choice = EmailChoice.objects.filter(user_id=user_id).first()
    current = choice.frequency if choice is not None else EmailChoice.Frequency.DAILY
    if request.method == "POST":
        wanted = request.POST.get("frequency", "")
        if wanted not in EmailChoice.Frequency.values:
            return HttpResponseBadRequest(
                "frequency must be one of: " + ", ".join(EmailChoice.Frequency.values)
            )
        EmailChoice.objects.update_or_create(user_id=user_id, defaults={"frequency": wanted})
        messages.success(request, f"Email: {EmailChoice.Frequency(wanted).label.lower()}.")
        return redirect("admin:suggestions_suggestion_email")
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Email",
        "choices": EmailChoice.Frequency.choices,
        "current": current,
        "address": getattr(user, "email", ""),
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/suggestions/review/email.html", context)
