"""Clients for the notification tests: what an SDK client's message_handler heard, and a raw HTTP client
that opens a session, subscribes, and listens on the GET stream exactly when a test says so."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TIMEOUT = 30.0


class Heard:
    """What the SDK client's message_handler received, with a way to wait for it."""

    def __init__(self) -> None:
        self.notifications: list[Any] = []

    async def handler(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.notifications.append(message)

    def of(self, kind: type) -> list[Any]:
        return [n for n in self.notifications if isinstance(n, kind)]

    async def wait(self, check: Callable[[], Any], what: str, seconds: float = 10.0) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if found := check():
                return found
            await asyncio.sleep(0.05)
        raise AssertionError(f"{what} did not arrive within {seconds} s; heard {self.notifications!r}")


@asynccontextmanager
async def sdk_client(url: str, token: str, heard: Heard | None = None) -> AsyncIterator[Client]:
    """The official SDK client on a handshake session at `url`, its notifications going to `heard`."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        handler = heard.handler if heard is not None else None
        async with Client(transport, mode="legacy", message_handler=handler) as client:
            await asyncio.sleep(0.3)  # the SDK opens its GET stream in the background
            yield client


class RawSession:
    """One handshake session over plain HTTP; each call may go to any worker's URL."""

    def __init__(self, http: httpx2.AsyncClient, token: str) -> None:
        self.http = http
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }

    async def open(self, url: str) -> None:
        init = await self.initialize(url)
        assert "Mcp-Session-Id" in init.headers, init.text
        self.headers["Mcp-Session-Id"] = init.headers["Mcp-Session-Id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.http.post(f"{url}/mcp", headers=self.headers, json=done)).status_code == 202

    async def initialize(self, url: str) -> httpx2.Response:
        return await self.http.post(
            f"{url}/mcp",
            headers=self.headers,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            },
        )

    async def request(self, url: str, method: str, params: dict[str, Any]) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
        return await self.http.post(f"{url}/mcp", headers=self.headers, json=body)

    async def subscribe(self, url: str, uri: str) -> None:
        reply = await self.request(url, "resources/subscribe", {"uri": uri})
        assert "error" not in reply.text, reply.text

    async def first_event_id(self, url: str) -> int:
        """Open the GET stream, read its priming event, and go away."""
        listen = {**self.headers, "Accept": "text/event-stream"}
        async with self.http.stream("GET", f"{url}/mcp", headers=listen) as stream:
            first = await anext(stream.aiter_text())
        found = re.search(r"^id: (\d+)$", first, re.M)
        assert found is not None, first
        return int(found.group(1))

    async def resume_until(self, url: str, last: int, marker: str) -> str:
        """Resume the GET stream after event `last` and read until `marker` arrives."""
        resume = {**self.headers, "Accept": "text/event-stream", "Last-Event-ID": str(last)}
        received = ""
        async with self.http.stream("GET", f"{url}/mcp", headers=resume) as stream:
            async for chunk in stream.aiter_text():
                received += chunk
                if marker in received:
                    break
        return received

    async def resume_whole(self, url: str, last: int) -> str:
        """Resume the GET stream after event `last` and read it until the server ends it
        (LENSRELAY_MCP_STREAM_MAX_SECONDS)."""
        resume = {**self.headers, "Accept": "text/event-stream", "Last-Event-ID": str(last)}
        received = ""
        async with self.http.stream("GET", f"{url}/mcp", headers=resume) as stream:
            async for chunk in stream.aiter_text():
                received += chunk
        return received


def sse_events(text: str) -> list[tuple[int | None, dict[str, Any]]]:
    """The (id, JSON-RPC message) of each event with data, in order (the priming event has none)."""
    found: list[tuple[int | None, dict[str, Any]]] = []
    for block in text.split("\n\n"):
        lines = block.split("\n")
        data = "\n".join(line[5:].strip() for line in lines if line.startswith("data:"))
        if data:
            seq = next((int(line[4:]) for line in lines if line.startswith("id: ")), None)
            found.append((seq, json.loads(data)))
    return found


def event_ids(text: str) -> list[int]:
    return [int(found) for found in re.findall(r"^id: (\d+)$", text, re.M)]
