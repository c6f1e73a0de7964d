"""What a reviewer posts with a decision, on every page that decides (the review page, the suggestion's
page, the editor): a note for the author, and the inserted texts as the reviewer changed them."""

from __future__ import annotations

from django.http import HttpRequest

from suggestions.lifecycle.deciding import Decision, suggestion_accept, suggestion_reject
from suggestions.models import Suggestion

NOTE_MAX_CHARS = 2000


def posted_note(request: HttpRequest) -> str:
    return request.POST.get("note", "").strip()[:NOTE_MAX_CHARS]


def posted_revision(request: HttpRequest) -> list[str]:
    """The inserted texts as the reviewer changed them, one per part of the suggestion (none: as proposed).
    Browsers send a text field's line breaks as CRLF; the note's are LF."""
    return [text.replace("\r\n", "\n") for text in request.POST.getlist("revision")]


def posted_decision(request: HttpRequest, *, suggestion: Suggestion, accept: bool) -> Decision:
    """Accept (with the posted revision, if any) or reject ``suggestion`` as the signed-in reviewer, with
    the posted note."""
    if accept:
        return suggestion_accept(
            suggestion=suggestion,
            user=request.user,
            note=posted_note(request),
            revision=posted_revision(request),
        )
    return suggestion_reject(suggestion=suggestion, user=request.user, note=posted_note(request))
