"""Bearer tokens in plain HTTP views and the MCP endpoint (django-ninja's `TokenAuth` is in `lensrelay.api`),
and the 401 that says why one was refused (missing, malformed, unknown, expired, revoked).

No django-ninja here: `/ready` and `/mcp` import this, and a fresh server answers them without loading it.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse

from lensrelay.access.auth import REFUSALS, Access, aauthenticate_token, atoken_refusal
from lensrelay.access.client_tokens import ClientTokenRefused, client_token_access, is_client_token


def header_refusal(request: HttpRequest) -> str | None:
    """ "missing" or "malformed" when the Authorization header cannot carry a bearer token; None when it
    carries one (whose own refusal, if any, is `lensrelay.access.auth.token_refusal`)."""
    header = request.headers.get("Authorization", "")
    if not header.strip():
        return "missing"
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return "malformed"
    return None


def bearer_token(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def unauthorized(
    message: str = "A valid bearer token is required.", reason: str | None = None
) -> JsonResponse:
    body = {"error": message} if reason is None else {"error": message, "reason": reason}
    response = JsonResponse(body, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="lens-relay"'
    return response


async def refusal(request: HttpRequest, reason: str | None = None) -> JsonResponse:
    """The 401 for a request whose token was refused, saying why: missing, malformed, unknown, expired or
    revoked (`reason` when the caller already knows it, e.g. from a client token's check)."""
    if reason is None:
        reason = header_refusal(request) or await atoken_refusal(bearer_token(request))
    return unauthorized(REFUSALS.get(reason, REFUSALS["unknown"]), reason=reason)


async def bearer_access(request: HttpRequest, doc_id: str | None) -> Access | JsonResponse:
    """The caller's access, or the 401 saying why not. With `doc_id`, a client token for that document
    is taken too (y-sweet's `/d/` routes); without, only API tokens (its server-side `/doc/` routes)."""
    raw = bearer_token(request)
    if is_client_token(raw):
        assert raw is not None
        if doc_id is None:
            return unauthorized(
                "A client token only opens its own document (the /d/<id>/ routes and socket); this route "
                "needs an API token.",
                reason="client-token",
            )
        try:
            return await sync_to_async(client_token_access)(raw, doc_id)
        except ClientTokenRefused as exc:
            return unauthorized(str(exc), reason=exc.reason)
    access = await aauthenticate_token(raw)
    if access is None:
        return await refusal(request)
    return access
