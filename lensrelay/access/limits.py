"""Request bodies read within a limit, and the JSON 413 that answers one over it."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse


def read_body(request: HttpRequest, *, limit: int) -> bytes | None:
    """The body, or None when it is over `limit` bytes.

    Read from the stream, never `request.body`: that one refuses anything over Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) with an HTML 400 page, whatever limit the endpoint has.
    """
    try:
        declared = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return None
    body = request.read(limit + 1)
    return None if len(body) > limit else body


def body_too_large(limit: int) -> JsonResponse:
    return JsonResponse(
        {
            "error": f"The body is larger than the limit of {limit} bytes; nothing was applied.",
            "limit": limit,
        },
        status=413,
    )
