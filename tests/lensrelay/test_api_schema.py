"""Every HTTP route lensrelay/urls.py serves is in the OpenAPI schema (and so in /api/docs)."""

from __future__ import annotations

import re

from lensrelay.api import api
from lensrelay.urls import urlpatterns

# Not API routes: the landing page and its icon, the admin, the pages where an invited person chooses a
# password, and the ninja API's own mount (its operations are listed).
NOT_API = {
    "",
    "favicon.ico",
    "admin/",
    "accounts/password/<uidb64>/<token>/",
    "accounts/password/done/",
    "api/",
}


def _openapi_path(route: str) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)


def test_every_served_route_is_in_the_schema() -> None:
    served = {_openapi_path(str(p.pattern)) for p in urlpatterns if str(p.pattern) not in NOT_API}
    paths = api.get_openapi_schema(path_prefix="/api/")["paths"]
    assert served - set(paths) == set()
    assert {"/api/folders", "/api/documents", "/doc/{doc_id}/auth", "/check_store"} <= set(paths)


def test_plain_routes_are_bearer_authenticated_except_readiness() -> None:
    paths = api.get_openapi_schema(path_prefix="/api/")["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            expected = [] if path == "/ready" else [{"TokenAuth": []}]
            if path == "/metrics":  # its own token, or an allowed address (no credential at all)
                expected = [{"MetricsToken": []}, {}]
            if not path.startswith("/api/"):
                assert operation["security"] == expected, (method, path)
                assert "401" in operation["responses"] or path == "/ready", (method, path)
