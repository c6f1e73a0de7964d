"""Bearer tokens in plain HTTP views and the MCP endpoint (django-ninja's `TokenAuth` is in `lensrelay.api`).

No django-ninja here: `/ready` and `/mcp` import this, and a fresh server answers them without loading it.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse


def bearer_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def unauthorized(message: str = "A valid bearer token is required.") -> JsonResponse:
    response = JsonResponse({"error": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="lens-relay"'
    return response
