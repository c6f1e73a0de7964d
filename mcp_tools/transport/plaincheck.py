"""The common, well-formed MCP messages checked without `mcp-types` (issue 11, start-up).

Importing `mcp_types` builds ~500 pydantic models (both protocol eras' surfaces and the version-free
models), 0.4-0.8 s of CPU that a fresh server paid before its first answer. The messages every session
starts with (the JSON-RPC envelope; `initialize`, `tools/list`, `tools/call` and `ping` in the handshake
era) are checked here instead, and `mcp_types` is imported when something else arrives.

Each check accepts only part of what the schema accepts: exact JSON types, optional fields absent, null
or of their plain type, unknown keys ignored as the schema's models ignore them. Whatever a check does not
accept goes to the `mcp_types` models, which either accept an unusual but valid form or give the error:
answers, errors included, are the same as with the models alone (tests/mcp_tools/transport/test_plaincheck.py
pins each check against its model).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp_tools.transport.versions import HANDSHAKE_VERSIONS

Check = Callable[[Any], bool]


def _text(value: Any) -> bool:
    return type(value) is str


def _integer(value: Any) -> bool:
    return type(value) is int  # not bool, not float


def _flag(value: Any) -> bool:
    return type(value) is bool


def _object(value: Any) -> bool:
    return type(value) is dict


def _null(value: Any) -> bool:
    return value is None


def _or_null(check: Check) -> Check:
    return lambda value: value is None or check(value)


def _either(*checks: Check) -> Check:
    return lambda value: any(check(value) for check in checks)


def _objects_of_objects(value: Any) -> bool:
    return type(value) is dict and all(type(item) is dict for item in value.values())


def _shape(required: Mapping[str, Check], optional: Mapping[str, Check]) -> Check:
    """An object with the required keys, optional ones absent or passing; other keys are ignored."""

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for key, passes in required.items():
            if key not in value or not passes(value[key]):
                return False
        return all(passes(value[key]) for key, passes in optional.items() if key in value)

    return check


# The 2025-11-25 surface (every handshake-era version is checked against it), model by model.
META = _shape({}, {"progressToken": _or_null(_either(_text, _integer))})
IMPLEMENTATION = _shape(
    {"name": _text, "version": _text},
    {"title": _or_null(_text), "description": _or_null(_text), "websiteUrl": _or_null(_text), "icons": _null},
)
CLIENT_CAPABILITIES = _shape(
    {},
    {
        "elicitation": _or_null(_shape({}, {"form": _or_null(_object), "url": _or_null(_object)})),
        "experimental": _or_null(_objects_of_objects),
        "roots": _or_null(_shape({}, {"listChanged": _or_null(_flag)})),
        "sampling": _or_null(_shape({}, {"context": _or_null(_object), "tools": _or_null(_object)})),
        "tasks": _null,
    },
)
INITIALIZE_PARAMS = _shape(
    {"protocolVersion": _text, "capabilities": CLIENT_CAPABILITIES, "clientInfo": IMPLEMENTATION},
    {"_meta": _or_null(META)},
)
CALL_TOOL_PARAMS = _shape(
    {"name": _text},
    {
        "arguments": _or_null(_object),
        "task": _or_null(_shape({}, {"ttl": _or_null(_integer)})),
        "_meta": _or_null(META),
    },
)
PAGINATED_PARAMS = _shape({}, {"cursor": _or_null(_text), "_meta": _or_null(META)})
REQUEST_PARAMS = _shape({}, {"_meta": _or_null(META)})

# Method -> (check of its params, whether params may be left out).
HANDSHAKE_REQUESTS: dict[str, tuple[Check, bool]] = {
    "initialize": (INITIALIZE_PARAMS, False),
    "tools/call": (CALL_TOOL_PARAMS, False),
    "tools/list": (PAGINATED_PARAMS, True),
    "ping": (REQUEST_PARAMS, True),
}


def request_params_pass(method: str, version: str, params: Any) -> bool:
    """Whether the schema of `version` surely accepts these params for `method` (False: ask it)."""
    if version not in HANDSHAKE_VERSIONS:
        return False
    known = HANDSHAKE_REQUESTS.get(method)
    if known is None:
        return False
    check, optional = known
    return (optional and params is None) or check(params)


def plain_request_id(value: Any) -> bool:
    """A JSON-RPC id the envelope model surely accepts: a string or an integer (never a bool)."""
    return type(value) is str or type(value) is int
