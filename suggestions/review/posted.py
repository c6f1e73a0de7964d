"""What a reviewer posts with a decision, on every page that decides (the review page, the suggestion's
page, the editor): a note for the author, and the inserted texts as the reviewer changed them."""

from __future__ import annotations

from django.http import HttpRequest

NOTE_MAX_CHARS = 2000


def posted_note(request: HttpRequest) -> str:
    return request.POST.get("note", "").strip()[:NOTE_MAX_CHARS]


def posted_revision(request: HttpRequest) -> list[str]:
    """The inserted texts as the reviewer changed them, one per part of the suggestion (none: as proposed).
    Browsers send a text field's line breaks as CRLF; the note's are LF."""
    return [text.replace("\r\n", "\n") for text in request.POST.getlist("revision")]
