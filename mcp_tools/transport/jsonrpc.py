"""JSON-RPC 2.0 envelopes: parse posted bodies into messages, build responses and errors.

Envelope shapes are checked with the `mcp-types` wire models (plain, well-formed requests and
notifications by `plaincheck`, without importing them); method params are checked per protocol version in
`dispatch`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from lensrelay.text.unicode_text import find_unencodable
from mcp_tools.transport.plaincheck import plain_request_id

__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RESOURCE_NOT_FOUND",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Invalid",
    "Notification",
    "Reply",
    "Request",
    "RpcError",
    "classify",
    "decode_json",
    "error_response",
    "result_response",
]

# Error codes, as `mcp_types` defines them (a test pins them): importing it builds every model of both
# protocol eras, which a fresh server's first answers do without (`plaincheck`).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
UNSUPPORTED_PROTOCOL_VERSION = -32022
# "Resource not found" in the handshake era (retired in 2026-07-28, where it is INVALID_PARAMS).
RESOURCE_NOT_FOUND = -32002

RequestId = int | str


class RpcError(Exception):
    """A protocol fault, answered as a JSON-RPC error (never a tool failure: those are results)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True)
class Reply:
    """A response or error the client posts back for a request the server sent it."""

    id: RequestId
    body: dict[str, Any]


@dataclass(frozen=True)
class Invalid:
    """Not a JSON-RPC message; answered with INVALID_REQUEST (with the id when one was readable)."""

    reason: str
    id: RequestId | None = None


Message = Request | Notification | Reply | Invalid


def decode_json(body: bytes) -> Any:
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError) as exc:
        # ValueError covers bad UTF-8 and huge integer literals too; RecursionError very deep nesting.
        raise RpcError(PARSE_ERROR, f"Parse error: the body is not valid JSON ({exc}).") from exc
    for message in decoded if isinstance(decoded, list) else [decoded]:
        if isinstance(message, dict):
            # An id or method that is not valid Unicode could not even be echoed back; params are
            # checked per method (a tool gets an isError result).
            envelope = {key: value for key, value in message.items() if key != "params"}
            problem = find_unencodable(envelope, where="the message")
            if problem is not None:
                raise RpcError(PARSE_ERROR, f"Parse error: {problem}.")
    return decoded


def _readable_id(obj: dict[str, Any]) -> RequestId | None:
    value = obj.get("id")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def classify(obj: Any) -> Message:
    """Which kind of JSON-RPC message `obj` (one decoded JSON value, not a batch) is."""
    if not isinstance(obj, dict):
        return Invalid("A JSON-RPC message must be a JSON object.")
    if obj.get("jsonrpc") != "2.0":
        return Invalid('A JSON-RPC message needs "jsonrpc": "2.0".', _readable_id(obj))
    plain = _plain_message(obj)
    if plain is not None:
        return plain
    from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

    try:
        if "method" in obj:
            if "id" in obj:
                request = JSONRPCRequest.model_validate(obj)
                return Request(request.id, request.method, request.params)
            notification = JSONRPCNotification.model_validate(obj)
            return Notification(notification.method, notification.params)
        if "result" in obj:
            response = JSONRPCResponse.model_validate(obj)
            return Reply(response.id, obj)
        if "error" in obj:
            error = JSONRPCError.model_validate(obj)
            if error.id is None:
                return Invalid("A posted error response needs the id of the request it answers.")
            return Reply(error.id, obj)
    except ValidationError as exc:
        return Invalid(f"Invalid JSON-RPC message: {short_validation_message(exc)}", _readable_id(obj))
    return Invalid(
        "A JSON-RPC message needs a method (request or notification) or a result or error.", _readable_id(obj)
    )


def _plain_message(obj: dict[str, Any]) -> Request | Notification | None:
    """The request or notification the envelope models would make of `obj`, when it surely is one
    (a string method, params an object or absent, an integer or string id); None: ask the models."""
    method, params = obj.get("method"), obj.get("params")
    if type(method) is not str or (params is not None and type(params) is not dict):
        return None
    if "id" not in obj:
        return Notification(method, params)
    request_id = obj["id"]
    return Request(request_id, method, params) if plain_request_id(request_id) else None


def short_validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error["loc"]) or "message"
        parts.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def result_response(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, error: RpcError) -> dict[str, Any]:
    # JSON-RPC wants "id": null on the wire when the request's id could not be read.
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_dict()}
