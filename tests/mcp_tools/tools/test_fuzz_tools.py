"""Generated arguments for every MCP tool through /mcp: never an internal error; a refusal changes nothing.

The arguments are built from each tool's inputSchema as `tools/list` serves it (so a tool added tomorrow is
fuzzed too), plus off-schema values (see tool_arguments). Every call must answer HTTP 200 with a result
(a failure being `isError: true`, never "Internal error") or at most an invalid-params error, never the
JSON-RPC internal error -32603; when the result is an error, no row of the document store, the documents or
the suggestions changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lensrelay.models import Document, YDoc, YUpdate
from lensrelay.vault.importexport import import_vault
from suggestions.models import Suggestion
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp, TokenFactory

from .tool_arguments import tool_arguments

pytestmark = pytest.mark.django_db(transaction=True)

DEMO = Path(__file__).resolve().parents[3] / "lensrelay" / "demo_vault"
EXAMPLES = 300
INTERNAL_ERROR = -32603
INVALID_PARAMS = -32602
WRITE_TOOLS = ("edit", "multi_edit", "write", "move", "delete")


class Session:
    """One MCP session with an edit token over the demo vault, and what its tools/list served."""

    def __init__(self, mcp: Mcp, session_id: str, tools: list[dict[str, Any]], paths: list[str]) -> None:
        self.mcp = mcp
        self.session_id = session_id
        self.tools = {tool["name"]: tool for tool in tools}
        self.paths = paths

    async def call(self, name: str, arguments: Any) -> dict[str, Any]:
        reply = await self.mcp.request(
            "tools/call", {"name": name, "arguments": arguments}, session=self.session_id, version=HANDSHAKE
        )
        assert reply.status == 200, (
            f"{name} {arguments!r:.300}: HTTP {reply.status} {reply.response.text:.500}"
        )
        message = reply.message
        if "error" in message:
            assert message["error"]["code"] == INVALID_PARAMS, f"{name} {arguments!r:.300}: {message}"
            return {"isError": True, "content": [{"type": "text", "text": message["error"]["message"]}]}
        result: dict[str, Any] = message["result"]
        return result


def stored_state() -> tuple[int, ...]:
    """Counts and high-water marks of everything a tool could write."""
    last_update = YUpdate.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return (
        YDoc.objects.count(),
        last_update,
        Document.objects.count(),
        Suggestion.objects.count(),
        Suggestion.objects.exclude(status="pending").count(),
    )


@pytest.fixture
async def session(
    store: Any, transactional_db: None, http: httpx.AsyncClient, tokens: TokenFactory
) -> Session:
    await import_vault(store=store, root=DEMO, folder_name="Lens")
    mcp = Mcp(http, await tokens("edit"))
    session_id = await mcp.initialize()
    listed = await mcp.request("tools/list", session=session_id)
    tools = listed.result["tools"]
    paths = [f"Lens/{p.relative_to(DEMO).as_posix()}" for p in sorted(DEMO.rglob("*.md"))]
    session = Session(mcp, session_id, tools, paths)
    # a suggestion of this token, so list_suggestions really runs its queries, and a text on which
    # backtracking patterns (HOSTILE_PATTERNS) run into grep's timeout
    seed = "a" * 3000 + "!\n" + "x" * 40 + "\n"
    seeded = await session.call("write", {"file_path": "Lens/Fuzz seed.md", "content": seed})
    assert not seeded["isError"], describe(seeded)
    return session


def describe(result: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result.get("content", []))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_every_tool_survives_generated_arguments(session: Session, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(session.tools)), label="tool")
    schema = session.tools[name]["inputSchema"]
    arguments = data.draw(tool_arguments(schema, session.paths), label="arguments")
    path = arguments.get("file_path")
    if name in WRITE_TOOLS and isinstance(path, str) and path in session.paths:
        await session.call("read", {"file_path": path})  # get past read-before-edit
    before = await sync_to_async(stored_state)()
    result = await session.call(name, arguments)
    text = describe(result)
    assert "Internal error" not in text, f"{name} {arguments!r:.300}: {text:.500}"
    if result.get("isError"):
        assert await sync_to_async(stored_state)() == before, f"{name} refused but changed: {text:.300}"


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("list_suggestions", {"path": "x" * 50_000}, "at most"),
        ("list_suggestions", {"path": "Lens/" + "é" * 25_000}, "at most"),
        ("write", {"file_path": "Lens/\udc80.md", "content": "hello"}, "unpaired surrogate"),
        ("write", {"file_path": "Lens/Fresh.md", "content": "bad \ud800 text"}, "unpaired surrogate"),
        (
            "edit",
            {"file_path": "Lens/Welcome.md", "old_string": "Welcome", "new_string": "\udfff"},
            "surrogate",
        ),
        ("read", {"file_path": "Lens/Welcome\udc80.md"}, "unpaired surrogate"),
        ("grep", {"pattern": "\udc80"}, "unpaired surrogate"),
        ("search", {"query": "x" * 50_000}, ""),
        ("glob", {"pattern": "*" * 50_000}, ""),
        ("grep", {"pattern": "(a+)+$", "output_mode": "content"}, "was stopped"),
    ],
)
async def test_findings_are_refused_clearly_and_store_nothing(
    session: Session, name: str, arguments: dict[str, Any], expected: str
) -> None:
    await session.call("read", {"file_path": "Lens/Welcome.md"})
    before = await sync_to_async(stored_state)()
    result = await session.call(name, arguments)
    text = describe(result)
    assert "Internal error" not in text and "database" not in text.lower(), text[:500]
    if expected:
        assert result["isError"] is True, text[:500]
        assert expected in text, text[:500]
    assert await sync_to_async(stored_state)() == before


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "id": "\udc80", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/\ud800"},
        {"jsonrpc": "2.0", "id": 8, "method": "resources/read", "params": {"uri": "lens://Lens/\udc80.md"}},
    ],
)
async def test_surrogates_outside_tool_arguments_are_protocol_errors_not_500s(
    session: Session, body: dict[str, Any]
) -> None:
    reply = await session.mcp.post(body, session=session.session_id, version=HANDSHAKE)
    assert reply.status in (200, 400), reply.response.text[:300]
    error = reply.error
    assert error["code"] in (-32700, INVALID_PARAMS), error
    assert "unpaired surrogate" in error["message"]


PERCENT_JUNK = st.lists(
    st.sampled_from(
        ["%ED%B2%80", "%FF", "%", "%2", "%2F", "%00", "..", "/", "Lens", "Welcome.md", "ü", "%C3%BC"]
    ),
    max_size=6,
).map("".join)


@settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=st.sampled_from(["resources/read", "resources/list"]),
    value=st.one_of(
        PERCENT_JUNK.map(lambda junk: "lens://" + junk),
        st.sampled_from(["lens://Lens/Welcome.md", "lens://", "file:///etc/passwd", "x" * 70_000]),
        st.text(max_size=30),
    ),
)
async def test_resource_uris_and_cursors_survive_generated_values(
    session: Session, method: str, value: str
) -> None:
    params = {"uri": value} if method == "resources/read" else {"cursor": value}
    reply = await session.mcp.request(method, params, session=session.session_id, version=HANDSHAKE)
    assert reply.status == 200, f"{method} {value!r:.200}: HTTP {reply.status}"
    message = reply.message
    if "error" in message:
        assert message["error"]["code"] != INTERNAL_ERROR, f"{method} {value!r:.200}: {message}"


def _plain(schema: dict[str, Any], defs: dict[str, Any], key: str) -> Any:
    """A value a tool accepts for `key` (schema-wise): the demo's welcome note for a path."""
    if "$ref" in schema:
        return _plain(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, key)
    if "anyOf" in schema:
        return _plain(schema["anyOf"][0], defs, key)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "string":
        return "Lens/Welcome.md" if key in ("file_path", "path") else "x" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    return {}


async def test_a_nul_character_in_any_string_argument_is_no_internal_error(session: Session) -> None:
    """PostgreSQL refuses NUL in text: one that reached a query was an internal error there. Every tool
    the session lists, every string argument, the others plain."""
    failures = []
    for name, tool in sorted(session.tools.items()):
        schema = tool["inputSchema"]
        defs, properties = schema.get("$defs", {}), schema.get("properties", {})
        required = {key: _plain(properties[key], defs, key) for key in schema.get("required", ())}
        for key, prop in sorted(properties.items()):
            if not any(option.get("type") == "string" for option in prop.get("anyOf", [prop])):
                continue
            arguments = {**required, key: "Lens/Wel\x00come.md" if key in ("file_path", "path") else "a\x00b"}
            if name in WRITE_TOOLS:
                await session.call("read", {"file_path": "Lens/Welcome.md"})
            before = await sync_to_async(stored_state)()
            result = await session.call(name, arguments)
            text = describe(result)
            if "Internal error" in text:
                failures.append(f"{name} {key}: {text:.200}")
            elif result.get("isError") and await sync_to_async(stored_state)() != before:
                failures.append(f"{name} {key}: refused but changed: {text:.200}")
    assert not failures, "\n".join(failures)
