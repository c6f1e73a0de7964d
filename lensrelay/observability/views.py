"""`GET /metrics`: the Prometheus exposition, for a scraper with the token or from an allowed address.

Synchronous on purpose: Django runs it in a thread, where the scrape-time gauges may query the database
and merging the workers' files never holds up an event loop.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from lensrelay.observability.metrics import flush_live_counts
from lensrelay.observability.protection import metrics_refusal
from lensrelay.observability.scrape import metrics_exposition

logger = logging.getLogger(__name__)

ALLOWED_METHODS = ("GET", "HEAD")


def _plain(status: int, message: str, headers: dict[str, str] | None = None) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
    for name, value in (headers or {}).items():
        response[name] = value
    response["Cache-Control"] = "no-store"
    return response


@csrf_exempt  # a POST is refused below, as every other method, after the caller is checked
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = metrics_refusal(
        remote_addr=request.META.get("REMOTE_ADDR"),
        authorization=request.headers.get("Authorization"),
        token=str(settings.LENSRELAY_METRICS_TOKEN),
        allow=list(settings.LENSRELAY_METRICS_ALLOW),
    )
    if refusal is not None:
        return _plain(refusal.status, refusal.message, refusal.headers)
    if request.method not in ALLOWED_METHODS:
        return _plain(405, "GET or HEAD only", {"Allow": ", ".join(ALLOWED_METHODS)})
    try:
        flush_live_counts()  # this process's numbers exact; other workers' at most a second old
        body, content_type = metrics_exposition(accept=request.headers.get("Accept", ""))
    except Exception:
        logger.exception("could not build the metrics exposition")
        return _plain(503, "metrics are unavailable right now; the server log says why", {"Retry-After": "5"})
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response
