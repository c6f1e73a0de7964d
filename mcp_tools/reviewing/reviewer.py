"""Who decides from the review app: the person who granted the OAuth access the session runs on, with their
own review permission, within the grant's folders. An API token acts for no person, so it can show the app
but decide nothing; a view-only grant was not given the right to change anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async

from lensrelay.access.auth import Access
from lensrelay.models import ApiToken
from suggestions.permissions import can_review

NO_PERSON = (
    "This session runs on an API token, which acts for no person, so it cannot decide suggestions. "
    "Connect the assistant with OAuth (as a reviewer), or decide in the Lens Relay admin."
)
VIEW_GRANT = (
    "This assistant was granted view-only access, so it cannot decide suggestions. Grant it the suggest "
    "role or higher, or decide in the Lens Relay admin."
)
NO_REVIEW = (
    "{person} may not review suggestions (the permission 'Can review suggestions' is missing), so this "
    "session cannot decide them."
)


@dataclass(frozen=True)
class Reviewer:
    """Whether this access may decide, and as whom (`user`: the granting person, or None with `refusal`)."""

    user: Any
    refusal: str = ""

    @property
    def allowed(self) -> bool:
        return self.user is not None and not self.refusal


def reviewer_of(access: Access) -> Reviewer:
    """The person this access decides as, checked now (rights are read fresh from the database)."""
    if access.kind != "grant" or access.token_id is None:
        return Reviewer(None, NO_PERSON)
    grant = ApiToken.objects.select_related("user").filter(pk=access.token_id).first()
    user = grant.user if grant is not None else None
    if user is None or not user.is_active or not user.is_staff:
        return Reviewer(None, NO_PERSON)
    if not access.can_suggest:
        return Reviewer(None, VIEW_GRANT)
    if not can_review(user):
        return Reviewer(None, NO_REVIEW.format(person=user.get_username()))
    return Reviewer(user)


areviewer_of = sync_to_async(reviewer_of)
