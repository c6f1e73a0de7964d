"""Bearer-token authentication for plain HTTP views and django-ninja operations."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from ninja.security import HttpBearer

from lensrelay.auth import Access, aauthenticate_token


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


class TokenAuth(HttpBearer):
    async def authenticate(self, request: HttpRequest, token: str) -> Access | None:  # type: ignore[override]
        return await aauthenticate_token(token)


def request_access(request: Any) -> Access:
    access = request.auth
    assert isinstance(access, Access)
    return access
