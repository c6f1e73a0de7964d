"""The inbox: what waits for the signed-in person. For a reviewer, the pending suggestions by note, the
note changed last first; for everyone who reads notes, the open threads that @mention them. Each opens the
editor at its place. Its count shows in every admin page's header."""

from __future__ import annotations

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from lensrelay.access.auth import access_for_user
from suggestions.models import Suggestion
from suggestions.permissions import can_review
from suggestions.review.review_page import NO_REVIEW_REASON, age_of
from suggestions.selectors import review_inbox, threads_mentioning

INBOX_LIMIT = 500


def inbox_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest) -> HttpResponse:
    reads = access_for_user(request.user) is not None
    if not model_admin.has_view_permission(request) and not reads:
        raise PermissionDenied
    reviews = can_review(request.user) and model_admin.has_view_permission(request)
    notes = review_inbox(limit=INBOX_LIMIT) if reviews else []
    mentions = threads_mentioning(username=request.user.get_username()) if reads else []
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Your review inbox",
        "notes": [(note, [(s, age_of(s.created)) for s in note.suggestions]) for note in notes],
        "limit": INBOX_LIMIT,
        "full": sum(len(note.suggestions) for note in notes) >= INBOX_LIMIT,
        "no_review_reason": "" if reviews else NO_REVIEW_REASON,
        "mentions": [(t, age_of(t.updated), list(t.comments.all())[-1]) for t in mentions],
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/suggestions/review/inbox.html", context)
