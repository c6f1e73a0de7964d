"""Every HTTP response that carries bytes a token wrote (file blobs, document states, versions) is made here.

Such bytes are served from the admin's own origin (unless `LENSRELAY_USER_CONTENT_ORIGIN` moves the
download links elsewhere), so a stored `.html` or `.svg` opened by a signed-in person must never run as a
page of that origin. Every response made here is therefore:
- an attachment (the browser saves it), except for a short allow-list of passive types a browser shows
  without running anything (PNG, JPEG, GIF, WebP, PDF, audio, video); SVG, HTML and XML are not on it;
- `X-Content-Type-Options: nosniff`, so a browser never guesses an active type from the bytes;
- `Content-Security-Policy: sandbox; default-src 'none'`: even shown inline, the document has a unique
  opaque origin, no scripts, and loads nothing.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils.http import content_disposition_header

SANDBOX_CSP = "sandbox; default-src 'none'"

# Types a browser renders without running anything the file says (PDF viewers run in their own process
# and honour the sandbox). Lower case, parameters stripped.
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"})
INLINE_PREFIXES = ("audio/", "video/")


def shown_inline(content_type: str) -> bool:
    """Whether bytes of this type may be shown in the browser rather than downloaded."""
    main = content_type.split(";", 1)[0].strip().lower()
    return main in INLINE_TYPES or main.startswith(INLINE_PREFIXES)


def disposition(*, content_type: str, filename: str) -> str:
    """The Content-Disposition for bytes of this type: inline only for the passive allow-list."""
    header = content_disposition_header(
        as_attachment=not shown_inline(content_type), filename=filename or "download"
    )
    assert header is not None  # only None for inline without a filename, never asked for here
    return header


def s3_overrides(*, content_type: str, filename: str) -> dict[str, str]:
    """Response headers a presigned S3 GET is signed to answer with: the bucket is another origin, but a
    client-chosen upload type (text/html) must not make it a page there either."""
    return {
        "ResponseContentType": content_type or "application/octet-stream",
        "ResponseContentDisposition": disposition(content_type=content_type, filename=filename),
    }


def user_content_response(*, data: bytes, content_type: str, filename: str = "") -> HttpResponse:
    """The response for bytes a token stored, with the headers that keep them inert in a browser."""
    response = HttpResponse(data, content_type=content_type or "application/octet-stream")
    response["Content-Disposition"] = disposition(content_type=content_type, filename=filename)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = SANDBOX_CSP
    return response


def user_json_response(payload: object, *, filename: str) -> JsonResponse:
    """JSON holding text a token wrote (a version's text, authors' names): an attachment with the same
    headers as any stored bytes, never a page; clients reading it with fetch() are not affected."""
    response = JsonResponse(payload, safe=False)
    response["Content-Disposition"] = disposition(content_type="application/json", filename=filename)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = SANDBOX_CSP
    return response


def user_content_url(*, relative: str, absolute: str) -> str:
    """Where a client downloads user content: on `LENSRELAY_USER_CONTENT_ORIGIN` when it is set (a host
    of its own, so that not even an allowed inline type shares the admin's cookies and origin), else the
    `absolute` URL the request's host gives `relative`."""
    origin = settings.LENSRELAY_USER_CONTENT_ORIGIN
    if not origin or not relative.startswith("/"):
        return absolute
    return origin.rstrip("/") + relative
