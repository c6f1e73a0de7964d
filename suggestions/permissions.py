"""Who may decide suggestions: one check shared by the admin and the review pages."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, PermissionsMixin

REVIEW_PERMISSION = "suggestions.review_suggestion"


def can_review(user: PermissionsMixin | AnonymousUser) -> bool:
    return user.has_perm(REVIEW_PERMISSION)
