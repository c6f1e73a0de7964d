"""Shared helpers for the transport tests (no tests here): an MCP client over httpx's ASGI transport, and
test-only tools registered for the duration of a test so nothing depends on the knowledge-base tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.core.asgi import get_asgi_application

from mcp_tools.lean import mcp_first
from mcp_tools.registry import REGISTRY, Tool, ToolArgs, ToolContext, ToolError

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
BOTH = "application/json, text/event-stream"
CLIENT_INFO = {"name": "pytest-client", "version": "1.0"}


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (comments and event names skipped)."""
    messages = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data:
            messages.append(json.loads("\n".join(data)))
    return messages


@dataclass
class Reply:
    response: httpx.Response

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self.response.headers

    @property
    def is_sse(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    def messages(self) -> list[dict[str, Any]]:
        if self.is_sse:
            return parse_sse(self.response.text)
        if not self.response.content:
            return []
        body = self.response.json()
        return body if isinstance(body, list) else [body]

    @property
    def message(self) -> dict[str, Any]:
        """The last message: the response, after any notifications."""
        messages = self.messages()
        assert messages, f"no message in {self.status} {self.response.text!r}"
        return messages[-1]

    @property
    def result(self) -> dict[str, Any]:
        message = self.message
        assert "result" in message, f"expected a result, got {message}"
        result: dict[str, Any] = message["result"]
        return result

    @property
    def error(self) -> dict[str, Any]:
        message = self.message
        assert "error" in message, f"expected an error, got {message}"
        error: dict[str, Any] = message["error"]
        return error

    def text(self) -> str:
        """The text of a tools/call result's content."""
        return "\n".join(block["text"] for block in self.result["content"] if block["type"] == "text")


class Mcp:
    """Posts to /mcp as one token (or none)."""

    def __init__(self, http: httpx.AsyncClient, token: str | None) -> None:
        self.http = http
        self.token = token
        self._ids = 0

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def headers(self, extra: dict[str, str] | None = None, *, accept: str | None = BOTH) -> dict[str, str]:
        headers: dict[str, str] = {"Content-Type": "application/json"}
        if accept is not None:
            headers["Accept"] = accept
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return {**headers, **(extra or {})}

    async def post(
        self,
        body: Any,
        *,
        session: str | None = None,
        version: str | None = None,
        accept: str | None = BOTH,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        extra: dict[str, str] = {}
        if session is not None:
            extra["Mcp-Session-Id"] = session
        if version is not None:
            extra["MCP-Protocol-Version"] = version
        extra.update(headers or {})
        content = raw if raw is not None else json.dumps(body).encode()
        response = await self.http.post("/mcp", content=content, headers=self.headers(extra, accept=accept))
        return Reply(response)

    async def initialize(
        self, version: str = HANDSHAKE, *, capabilities: dict[str, Any] | None = None, accept: str = BOTH
    ) -> str:
        reply = await self.post(
            {
                "jsonrpc": "2.0",
                "id": self.next_id(),
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": capabilities or {},
                    "clientInfo": CLIENT_INFO,
                },
            },
            accept=accept,
        )
        assert reply.status == 200, reply.response.text
        session_id = reply.headers["Mcp-Session-Id"]
        initialized = await self.post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=session_id, version=version
        )
        assert initialized.status == 202
        return session_id

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str,
        version: str | None = HANDSHAKE,
        accept: str = BOTH,
        request_id: int | None = None,
    ) -> Reply:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id or self.next_id(), "method": method}
        if params is not None:
            body["params"] = params
        return await self.post(body, session=session, version=version, accept=accept)

    async def modern(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        accept: str = BOTH,
    ) -> Reply:
        """A 2026-07-28 request with a correct envelope and headers, unless overridden."""
        envelope = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
            **(meta or {}),
        }
        full_params = {**(params or {}), "_meta": envelope}
        routing = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        for key in ("name", "uri"):
            if isinstance(full_params.get(key), str) and method in (
                "tools/call",
                "prompts/get",
                "resources/read",
            ):
                routing["Mcp-Name"] = full_params[key]
        routing.update(headers or {})
        body = {"jsonrpc": "2.0", "id": self.next_id(), "method": method, "params": full_params}
        return await self.post(body, headers=routing, accept=accept)


@pytest.fixture
async def http(store: object) -> AsyncIterator[httpx.AsyncClient]:
    # `store`: every request reads through the loop's document store, which the fixture closes (and
    # with it the store thread's database connection) when the test ends.
    transport = httpx.ASGITransport(app=cast(Any, mcp_first(get_asgi_application())))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as client:
        yield client


TokenFactory = Callable[..., Awaitable[str]]


@pytest.fixture
def tokens(make_token: Callable[..., str]) -> TokenFactory:
    """`await tokens("view")` creates a token and returns it raw."""

    async def create(role: str = "edit", **kwargs: Any) -> str:
        return await sync_to_async(make_token)(role=role, **kwargs)

    return create


@pytest.fixture
async def mcp(http: httpx.AsyncClient, tokens: TokenFactory) -> Mcp:
    """A client with an edit token."""
    return Mcp(http, await tokens("edit"))


# ------------------------------------------------------------------------------------------ test tools


class EchoArgs(ToolArgs):
    text: str
    times: int = 1


class NoArgs(ToolArgs):
    pass


class ToolGate:
    """Lets a test see that a tool is running, and holds it there until released."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()


GATE: dict[str, ToolGate] = {}


async def _echo(ctx: ToolContext, args: EchoArgs) -> str:
    return args.text * args.times


async def _whoami(ctx: ToolContext, args: NoArgs) -> str:
    return json.dumps(
        {"session_key": ctx.session_key, "client": ctx.client_name, "session_id": ctx.session_id}
    )


async def _write(ctx: ToolContext, args: NoArgs) -> str:
    return "written"


async def _fail(ctx: ToolContext, args: NoArgs) -> str:
    raise ToolError("Error: this tool failed on purpose.")


async def _crash(ctx: ToolContext, args: NoArgs) -> str:
    raise RuntimeError("secret internals")


async def _wait(ctx: ToolContext, args: NoArgs) -> str:
    gate = GATE["wait"]
    gate.started.set()
    await gate.release.wait()
    return "finished"


async def _chatty(ctx: ToolContext, args: NoArgs) -> str:
    scope = ctx.extra["mcp"]
    scope.log("debug", "a debug line")
    scope.log("warning", "a warning line")
    scope.progress(1, 2)
    scope.progress(2, 2)
    return "chatted"


def _tool(name: str, handler: Any, args: type[ToolArgs] = NoArgs, **flags: Any) -> Tool:
    return Tool(name=name, title=name, description=f"Test tool {name}.", args=args, handler=handler, **flags)


TEST_TOOLS = [
    _tool("transport_echo", _echo, EchoArgs),
    _tool("transport_whoami", _whoami),
    _tool("transport_write", _write, read_only=False, idempotent=False),
    _tool("transport_fail", _fail),
    _tool("transport_crash", _crash),
    _tool("transport_wait", _wait),
    _tool("transport_chatty", _chatty),
    _tool("transport_fixture_only", _echo, EchoArgs, fixture=True),
]


@pytest.fixture
def test_tools() -> Iterator[dict[str, Tool]]:
    GATE["wait"] = ToolGate()
    for tool in TEST_TOOLS:
        REGISTRY[tool.name] = tool
    try:
        yield {tool.name: tool for tool in TEST_TOOLS}
    finally:
        for tool in TEST_TOOLS:
            REGISTRY.pop(tool.name, None)
