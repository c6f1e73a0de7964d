"""The review inbox: what waits for the signed-in reviewer, by note, the note changed last first; each
suggestion opens the editor at its place. Its count shows in every admin page's header."""

from __future__ import annotations

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from suggestions.models import Suggestion
from suggestions.permissions import can_review
from suggestions.review.review_page import NO_REVIEW_REASON, age_of
from suggestions.selectors import review_inbox

INBOX_LIMIT = 500


def inbox_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    reviews = can_review(request.user)
    notes = review_inbox(limit=INBOX_LIMIT) if reviews else []
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Your review inbox",
        "notes": [(note, [(s, age_of(s.created)) for s in note.suggestions]) for note in notes],
        "limit": INBOX_LIMIT,
        "full": sum(len(note.suggestions) for note in notes) >= INBOX_LIMIT,
        "no_review_reason": "" if reviews else NO_REVIEW_REASON,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/suggestions/review/inbox.html", context)
