"""The landing page at ``/``: what this server is and how to connect to it; the icon at ``/favicon.ico``."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.templatetags.static import static

from lensrelay.api import api, ws_base


def home(request: HttpRequest) -> HttpResponse:
    base = (settings.LENSRELAY_PUBLIC_URL or request.build_absolute_uri("/")).rstrip("/")
    context = {
        "version": api.version,
        "base": base,
        "ws_base": ws_base(request),
        "demo": settings.LENSRELAY_DEMO,
    }
    return render(request, "lensrelay/home.html", context)


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page names: send them to the icon the pages link."""
    return HttpResponsePermanentRedirect(static("lensrelay/favicon.svg"))
