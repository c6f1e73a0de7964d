"""Where work waits, for the admin's own pages (index, folder, document): counts and links to review."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from lensrelay.access.auth import access_for_user
from suggestions.permissions import can_review
from suggestions.review.review_page import age_of, document_review
from suggestions.selectors import (
    documents_with_pending,
    pending_by_folder,
    pending_count_of_document,
    pending_of_folder,
    review_inbox_count,
    threads_mentioning,
)

register = template.Library()

CHANGELIST = "admin:suggestions_suggestion_changelist"


def _review_url(doc_id: str) -> str:
    return reverse("admin:suggestions_suggestion_review", args=[doc_id])


@register.inclusion_tag("admin/suggestions/review/pending_overview.html")
def pending_overview() -> dict[str, Any]:
    rows = [
        {
            "folder": row.folder_name,
            "pending": row.pending,
            "oldest": age_of(row.oldest),
            "list_url": f"{reverse(CHANGELIST)}?folder__id__exact={row.folder_id}"
            if row.folder_id
            else reverse(CHANGELIST),
        }
        for row in pending_by_folder()
    ]
    first = documents_with_pending()
    return {
        "rows": rows,
        "total": sum(r["pending"] for r in rows),
        "start_url": _review_url(first[0]) if first else "",
    }


@register.inclusion_tag("admin/suggestions/review/document_pending.html")
def document_pending(document: Any) -> dict[str, Any]:
    """The pending count with a link to the review page, and the note rendered (suggestions as marks)."""
    return {
        "review": document_review(doc_id=document.doc_id),
        "pending": pending_count_of_document(doc_id=document.doc_id),
        "review_url": _review_url(document.doc_id),
        "list_url": f"{reverse(CHANGELIST)}?document__id__exact={document.pk}",
    }


@register.inclusion_tag("admin/suggestions/review/folder_pending.html")
def folder_pending(folder_id: int) -> dict[str, Any]:
    return {
        "suggestions": [
            {
                "suggestion": s,
                "age": age_of(s.created),
                "review_url": _review_url(s.doc_id),
            }
            for s in pending_of_folder(folder_id=folder_id)
        ],
    }


@register.inclusion_tag("admin/suggestions/review/inbox_link.html", takes_context=True)
def review_inbox_link(context: dict[str, Any]) -> dict[str, Any]:
    """The header's link to the inbox, with how much waits: pending suggestions for reviewers, and for
    whoever reads notes the open threads that mention them (shown once there is one)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"url": ""}
    reviews = can_review(user)
    mentions = len(threads_mentioning(username=user.get_username())) if access_for_user(user) else 0
    if not reviews and not mentions:
        return {"url": ""}
    count = (review_inbox_count() if reviews else 0) + mentions
    return {"url": reverse("admin:suggestions_suggestion_inbox"), "count": count}
