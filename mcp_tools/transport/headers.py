"""HTTP headers of the streamable HTTP transport: names, Accept, Origin, and plain JSON responses."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host

from lensrelay.text.compact_json import compact_json

SESSION_ID = "Mcp-Session-Id"
PROTOCOL_VERSION = "MCP-Protocol-Version"
METHOD = "Mcp-Method"
NAME = "Mcp-Name"

JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"


@dataclass(frozen=True)
class Accepts:
    json: bool
    sse: bool

    @property
    def anything(self) -> bool:
        return self.json or self.sse


def parse_accept(header: str | None) -> Accepts:
    """Which of our two response types the Accept header allows; no header accepts both (RFC 9110)."""
    if header is None or not header.strip():
        return Accepts(json=True, sse=True)
    types = set()
    for part in header.split(","):
        media, _, params = part.partition(";")
        if re.search(r"(^|;)\s*q\s*=\s*0(\.0*)?\s*($|;)", params):
            continue  # q=0 means "not acceptable"
        types.add(media.strip().lower())
    wildcard = "*/*" in types
    return Accepts(
        json=wildcard or JSON_TYPE in types or "application/*" in types,
        sse=wildcard or SSE_TYPE in types or "text/*" in types,
    )


def content_type_is_json(request: HttpRequest) -> bool:
    """A missing Content-Type is tolerated (curl sends form types only when asked to)."""
    header = request.headers.get("Content-Type")
    if not header:
        return True
    media = header.split(";", 1)[0].strip().lower()
    return media == JSON_TYPE or media.endswith("+json")


def origin_allowed(request: HttpRequest) -> bool:
    """No Origin (a non-browser client) is fine; a browser origin must be one of ours.

    Ours: its host is in ALLOWED_HOSTS, or the whole origin is in LENSRELAY_MCP_ALLOWED_ORIGINS or
    CSRF_TRUSTED_ORIGINS. This is what stops DNS-rebinding pages from reaching a local server.
    """
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    origin = origin.strip()
    extra = [*settings.LENSRELAY_MCP_ALLOWED_ORIGINS, *settings.CSRF_TRUSTED_ORIGINS]
    if origin.rstrip("/") in {o.rstrip("/") for o in extra}:
        return True
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # includes the opaque origin "null"
    domain, _port = split_domain_port(parts.netloc)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def decode_header_value(value: str | None) -> str | None:
    """Undo the `=?base64?...?=` wrapping clients use for header values that are not plain ASCII."""
    if value is None:
        return None
    match = re.fullmatch(r"=\?base64\?(.*)\?=", value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def json_response(payload: Any, *, status: int = 200, session_id: str | None = None) -> HttpResponse:
    response = HttpResponse(
        compact_json(payload),
        status=status,
        content_type=JSON_TYPE,
    )
    if session_id:
        response[SESSION_ID] = session_id
    return response


def empty_response(status: int, *, session_id: str | None = None, allow: str | None = None) -> HttpResponse:
    response = HttpResponse(status=status)
    if session_id:
        response[SESSION_ID] = session_id
    if allow:
        response["Allow"] = allow
    return response


def bearer_challenge(*, invalid: bool, resource_metadata: str = "") -> str:
    """The 401's challenge; `resource_metadata` (RFC 9728) is where OAuth clients discover how to sign in."""
    challenge = 'Bearer realm="lens-relay"'
    if resource_metadata:
        challenge += f', resource_metadata="{resource_metadata}"'
    if invalid:
        challenge += ', error="invalid_token", error_description="The token is unknown, expired or revoked."'
    return challenge
