"""`/ready` resolves against a URLconf of its own (`lensrelay.server.urls_ready`), through the same
middleware.

The full URLconf imports every view and both django-ninja APIs; loaded by the first request that needs
it, it would make a fresh server's health check wait for all of that (issue 11: process start to the
first MCP answer). `/mcp` skips Django's routing altogether (`mcp_tools.lean`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

READY_PATH = "/ready"
READY_URLCONF = "lensrelay.server.urls_ready"


def ready_urlconf(get_response: Callable[[HttpRequest], Any]) -> Callable[[HttpRequest], Any]:
    if iscoroutinefunction(get_response):

        async def amiddleware(request: HttpRequest) -> HttpResponseBase:
            if request.path_info == READY_PATH:
                request.urlconf = READY_URLCONF  # type: ignore[attr-defined]
            response: Awaitable[HttpResponseBase] = get_response(request)
            return await response

        return markcoroutinefunction(amiddleware)

    def middleware(request: HttpRequest) -> HttpResponseBase:
        if request.path_info == READY_PATH:
            request.urlconf = READY_URLCONF  # type: ignore[attr-defined]
        result: HttpResponseBase = get_response(request)
        return result

    return middleware


ready_urlconf.sync_capable = True  # type: ignore[attr-defined]
ready_urlconf.async_capable = True  # type: ignore[attr-defined]
