"""`plaincheck` vouches only for what the `mcp-types` models accept, and makes the same of it.

The transport checks the common requests without importing `mcp_types` (issue 11, start-up); anything a
plain check does not accept goes to the models. So each check must accept a subset of its model's inputs,
and the envelope's plain reading must equal the model's. Random JSON shaped like each message (known keys
with right and wrong values, missing required keys, extra keys) is tried against both.
"""

from __future__ import annotations

from typing import Any

import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types import _v2025_11_25 as surface
from mcp_types import methods as wire
from mcp_types.jsonrpc import JSONRPCNotification, JSONRPCRequest
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from mcp_tools.transport import jsonrpc, plaincheck, versions
from mcp_tools.transport.jsonrpc import Notification, Request, classify
from mcp_tools.transport.plaincheck import HANDSHAKE_REQUESTS, request_params_pass

EXAMPLES = 300

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=4),
)
anything = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def shaped(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Objects with these keys (each value right or anything), sometimes missing a required one or
    carrying an unknown key, and sometimes not an object at all."""
    optional = {key: st.one_of(value, anything) for key, value in optional.items()}
    required = {key: st.one_of(value, anything) for key, value in required.items()}
    extra = st.dictionaries(st.sampled_from(["x", "meta", "name", "_meta", "title"]), anything, max_size=2)
    complete = st.fixed_dictionaries(required, optional=optional)
    partial = st.fixed_dictionaries({}, optional={**required, **optional})
    return st.one_of(
        complete, complete, partial, st.builds(lambda a, b: {**b, **a}, complete, extra), anything
    )


def nullable(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


objects = st.dictionaries(st.text(max_size=4), anything, max_size=3)
meta = nullable(shaped({}, {"progressToken": nullable(st.one_of(st.text(max_size=4), st.integers()))}))
implementation = shaped(
    {"name": st.text(max_size=4), "version": st.text(max_size=4)},
    {
        "title": nullable(st.text(max_size=4)),
        "description": nullable(st.text(max_size=4)),
        "websiteUrl": nullable(st.text(max_size=4)),
        "icons": nullable(st.lists(shaped({"src": st.text(max_size=4)}, {}), max_size=2)),
    },
)
capabilities = shaped(
    {},
    {
        "elicitation": nullable(shaped({}, {"form": nullable(objects), "url": nullable(objects)})),
        "experimental": nullable(st.dictionaries(st.text(max_size=4), objects, max_size=2)),
        "roots": nullable(shaped({}, {"listChanged": nullable(st.booleans())})),
        "sampling": nullable(shaped({}, {"context": nullable(objects), "tools": nullable(objects)})),
        "tasks": nullable(objects),
    },
)
PARAMS: dict[str, st.SearchStrategy[Any]] = {
    "initialize": shaped(
        {"protocolVersion": st.text(max_size=10), "capabilities": capabilities, "clientInfo": implementation},
        {"_meta": meta},
    ),
    "tools/call": shaped(
        {"name": st.text(max_size=4)},
        {
            "arguments": nullable(objects),
            "task": nullable(shaped({}, {"ttl": nullable(st.integers())})),
            "_meta": meta,
        },
    ),
    "tools/list": nullable(shaped({}, {"cursor": nullable(st.text(max_size=4)), "_meta": meta})),
    "ping": nullable(shaped({}, {"_meta": meta})),
}


def models_accept(method: str, version: str, params: Any) -> bool:
    try:
        wire.validate_client_request(method, version, params)
    except ValidationError:
        return False
    return True


def test_every_method_with_a_plain_check_has_params_drawn_here() -> None:
    assert set(HANDSHAKE_REQUESTS) == set(PARAMS)


@pytest.mark.parametrize("method", sorted(PARAMS))
@pytest.mark.parametrize("version", versions.HANDSHAKE_VERSIONS)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_a_plain_check_accepts_only_what_the_models_accept(method: str, version: str, data: Any) -> None:
    params = data.draw(PARAMS[method])
    if request_params_pass(method, version, params):
        assert models_accept(method, version, params), params


COMMON = [
    (
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}},
    ),
    (
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}},
            "clientInfo": {"name": "mcp", "version": "1.2", "title": None},
        },
    ),
    ("tools/call", {"name": "read", "arguments": {"file_path": "Lens/x.md"}}),
    ("tools/call", {"name": "read", "arguments": {"file_path": "x"}, "_meta": {"progressToken": 7}}),
    ("tools/list", None),
    ("tools/list", {"cursor": "abc"}),
    ("ping", None),
]


@pytest.mark.parametrize(("method", "params"), COMMON)
def test_the_common_requests_need_no_models(method: str, params: Any) -> None:
    for version in versions.HANDSHAKE_VERSIONS:
        assert request_params_pass(method, version, params)
        assert models_accept(method, version, params)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}),  # clientInfo missing
        (
            "initialize",
            {"protocolVersion": 2025, "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}},
        ),
        ("tools/call", {"name": 7}),
        ("tools/call", {"name": "read", "arguments": []}),
        ("tools/call", None),
        ("tools/call", {"name": "read", "task": {"ttl": True}}),  # a bool is not vouched for
        ("tools/list", {"cursor": 3}),
        ("tools/list", {"_meta": {"progressToken": 1.5}}),
        ("resources/list", None),  # no plain check: the models decide
    ],
)
def test_what_a_plain_check_does_not_vouch_for_goes_to_the_models(method: str, params: Any) -> None:
    assert not request_params_pass(method, "2025-11-25", params)


def test_the_stateless_era_is_always_checked_by_the_models() -> None:
    params = {"name": "read", "arguments": {}}
    assert not request_params_pass("tools/call", versions.MODERN_VERSIONS[0], params)


def test_invalid_params_get_the_models_error() -> None:
    from mcp_tools.transport.dispatch import validate_params
    from mcp_tools.transport.jsonrpc import RpcError

    with pytest.raises(RpcError) as caught:
        validate_params("tools/call", "2025-11-25", {"name": 7})
    assert caught.value.code == jsonrpc.INVALID_PARAMS
    assert (
        caught.value.message == "Invalid params for tools/call: params.name: Input should be a valid string"
    )


envelopes = st.one_of(
    shaped(
        {"jsonrpc": st.just("2.0"), "method": st.text(max_size=4)},
        {
            "id": st.one_of(st.integers(), st.text(max_size=4), st.booleans(), st.floats(allow_nan=False)),
            "params": nullable(objects),
        },
    ),
    anything,
)


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(obj=envelopes)
def test_the_plain_envelope_reads_as_the_models_do(obj: Any) -> None:
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        return
    plain = jsonrpc._plain_message(obj)
    if plain is None:
        return
    if isinstance(plain, Request):
        request = JSONRPCRequest.model_validate(obj)
        assert plain == Request(request.id, request.method, request.params)
        assert type(plain.id) is type(request.id)
    else:
        notification = JSONRPCNotification.model_validate(obj)
        assert plain == Notification(notification.method, notification.params)
    assert classify(obj) == plain


def test_an_envelope_the_plain_reading_refuses_is_read_by_the_models() -> None:
    assert classify({"jsonrpc": "2.0", "id": True, "method": "ping"}).__class__.__name__ == "Invalid"
    assert (
        classify({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}).__class__.__name__ == "Invalid"
    )
    assert classify({"jsonrpc": "2.0", "id": 1, "result": {}}).__class__.__name__ == "Reply"


def test_the_codes_and_keys_written_out_are_mcp_types_own() -> None:
    for name in (
        "PARSE_ERROR",
        "INVALID_REQUEST",
        "METHOD_NOT_FOUND",
        "INVALID_PARAMS",
        "INTERNAL_ERROR",
        "HEADER_MISMATCH",
        "UNSUPPORTED_PROTOCOL_VERSION",
    ):
        assert getattr(jsonrpc, name) == getattr(mcp_types, name), name
    for name in (
        "PROTOCOL_VERSION_META_KEY",
        "CLIENT_CAPABILITIES_META_KEY",
        "CLIENT_INFO_META_KEY",
        "LOG_LEVEL_META_KEY",
        "SERVER_INFO_META_KEY",
    ):
        assert getattr(versions, name) == getattr(mcp_types, name), name
    assert set(versions.HANDSHAKE_VERSIONS) <= set(KNOWN_PROTOCOL_VERSIONS)


@pytest.mark.parametrize(
    ("model", "required"),
    [
        (surface.InitializeRequestParams, {"protocolVersion", "capabilities", "clientInfo"}),
        (surface.ClientCapabilities, set()),
        (surface.Implementation, {"name", "version"}),
        (surface.CallToolRequestParams, {"name"}),
        (surface.PaginatedRequestParams, set()),
        (surface.RequestParams, set()),
        (surface.Meta, set()),
        (surface.TaskMetadata, set()),
        (surface.Roots, set()),
        (surface.Sampling, set()),
        (surface.Elicitation, set()),
    ],
)
def test_the_models_the_checks_follow_still_ignore_unknown_keys(
    model: type[BaseModel], required: set[str]
) -> None:
    # The plain checks ignore keys they do not know; a model that starts refusing them (or requiring a
    # new field) must be followed here.
    assert model.model_config.get("extra") in (None, "ignore", "allow")
    assert {
        field.alias or name for name, field in model.model_fields.items() if field.is_required()
    } == required


def test_the_plain_checks_cover_the_handshake_surface_models() -> None:
    for method in HANDSHAKE_REQUESTS:
        for version in versions.HANDSHAKE_VERSIONS:
            assert wire.CLIENT_REQUESTS[(method, version)].__module__ == surface.__name__
    assert (
        plaincheck.HANDSHAKE_REQUESTS["tools/list"][1] and not plaincheck.HANDSHAKE_REQUESTS["tools/call"][1]
    )
