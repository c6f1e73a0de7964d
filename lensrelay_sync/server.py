"""The client's HTTP calls: which folder, whether the token may write, and attachments' bytes (the file
routes Relay clients use: ask for an upload or download URL, then send or fetch the bytes there).

Plain `urllib` in a worker thread: nothing to install.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode, urljoin, urlsplit, urlunsplit
from urllib.request import Request, urlopen

TIMEOUT = 15.0
# An attachment's bytes may take longer than a JSON answer.
TRANSFER_TIMEOUT = 120.0


# The MCP revision the client speaks: stateless, so a save becomes a suggestion in one request.
MCP_VERSION = "2026-07-28"
CLIENT_NAME = "lensrelay-sync"


@dataclass(frozen=True)
class ToolAnswer:
    text: str
    structured: dict[str, Any]
    is_error: bool


class ServerError(RuntimeError):
    """The server cannot be used as asked; the message is for the person who started the client."""


@dataclass(frozen=True)
class Folder:
    name: str
    doc_id: str

    @property
    def relay_id(self) -> str:
        # A note's document id is the folder's relay id (the first 36 characters) then the note's uuid.
        return self.doc_id[:36]

    def note_doc_id(self, uuid: str) -> str:
        return f"{self.relay_id}-{uuid}"


@dataclass(frozen=True)
class Server:
    url: str
    token: str

    @property
    def ws_base(self) -> str:
        parts = urlsplit(self.url.rstrip("/"))
        scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
        return urlunsplit((scheme, parts.netloc, parts.path, "", ""))

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = Request(
            self.url.rstrip("/") + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        _, body = self._open(request, timeout=TIMEOUT, what=f"{method} {path}: ")
        return json.loads(body or b"null")

    def _open(self, request: Request, *, timeout: float, what: str) -> tuple[str, bytes]:
        """The answer's content type and body; a refusal (with the reason the body gives) or a server out
        of reach as a ServerError."""
        try:
            with urlopen(request, timeout=timeout) as response:
                return str(response.headers.get("Content-Type", "")), bytes(response.read())
        except HTTPError as exc:
            try:
                said = json.loads(exc.read()).get("error", "")
            except (ValueError, AttributeError):
                said = ""
            if isinstance(said, dict):  # a JSON-RPC error
                said = said.get("message", "")
            raise ServerError(f"{what}the server answered {exc.code} {said}".rstrip()) from None
        except (URLError, OSError) as exc:
            raise ServerError(f"cannot reach {self.url}: {getattr(exc, 'reason', exc)}") from None

    def _transfer(self, method: str, url: str, data: bytes | None = None, content_type: str = "") -> bytes:
        """Send or fetch bytes at a URL the server handed out (signed: no bearer token goes with it, as it
        may point at another host, such as a bucket)."""
        headers = {"Content-Type": content_type} if content_type else {}
        request = Request(urljoin(self.url.rstrip("/") + "/", url), data=data, method=method, headers=headers)
        return self._open(request, timeout=TRANSFER_TIMEOUT, what="")[1]

    def upload(self, *, doc_id: str, digest: str, data: bytes, content_type: str) -> None:
        """Store an attachment's bytes for the file's document, as a Relay client does (blocking)."""
        query = urlencode({"hash": digest, "content_type": content_type, "content_length": str(len(data))})
        answer = self._call("POST", f"/f/{doc_id}/upload-url?{query}")
        self._transfer("PUT", str(answer["uploadUrl"]), data, content_type or "application/octet-stream")

    def download(self, *, doc_id: str, digest: str) -> bytes:
        """The bytes of one stored version of an attachment (blocking)."""
        answer = self._call("GET", f"/f/{doc_id}/download-url?{urlencode({'hash': digest})}")
        return self._transfer("GET", str(answer["downloadUrl"]))

    def tool(self, name: str, arguments: dict[str, Any]) -> ToolAnswer:
        """Call one of the server's MCP tools (blocking), as a stateless client of protocol 2026-07-28 does:
        one POST, no session; the server keeps what this token and client name have read."""
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MCP_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": CLIENT_NAME, "version": "1"},
                },
            },
        }
        request = Request(
            self.url.rstrip("/") + "/mcp",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": MCP_VERSION,
                "Mcp-Method": "tools/call",
                "Mcp-Name": name,
            },
        )
        kind, raw = self._open(request, timeout=TIMEOUT, what=f"the {name} tool: ")
        if kind.startswith("text/event-stream"):  # the answer is the stream's last `data:` line
            raw = next(
                (line[5:] for line in reversed(raw.splitlines()) if line.startswith(b"data:")), b"null"
            )
        try:
            message = json.loads(raw)
        except ValueError:
            raise ServerError(f"the {name} tool: the server's answer is not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("result"), dict):
            said = message.get("error", {}).get("message", "") if isinstance(message, dict) else ""
            raise ServerError(f"the {name} tool: {said or 'no result'}")
        result = message["result"]
        text = "".join(
            str(item.get("text", "")) for item in result.get("content", []) if isinstance(item, dict)
        )
        structured = result.get("structuredContent")
        return ToolAnswer(
            text=text,
            structured=structured if isinstance(structured, dict) else {},
            is_error=bool(result.get("isError")),
        )

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        return await asyncio.to_thread(self._call, method, path, body)

    async def folder(self, name: str | None) -> Folder:
        """The folder to mirror: ``name``, or the token's only folder when no name is given."""
        listed = [Folder(f["name"], f["doc_id"]) for f in await self.call("GET", "/api/folders")]
        if name is None:
            if len(listed) == 1:
                return listed[0]
            names = ", ".join(repr(f.name) for f in listed) or "none"
            raise ServerError(f"the token sees {len(listed)} folders ({names}): choose one with --folder")
        for folder in listed:
            if folder.name == name:
                return folder
        raise ServerError(f"the token sees no folder named {name!r}")

    def move(self, *, folder: str, path: str, new: str) -> int:
        """Move a note within its folder as the server's own moves do, every link to it following
        (blocking); the number of links rewritten."""
        answer = self._call("POST", "/api/documents/move", {"folder": folder, "path": path, "new_path": new})
        return int(answer.get("links_rewritten", 0)) if isinstance(answer, dict) else 0

    async def may_write(self, folder: Folder) -> bool:
        """Whether the token writes live (`edit`, `admin`) rather than only reads (`view`, `suggest`): the
        y-sweet auth route mints a client token of exactly the rights the token has."""
        minted = await self.call("POST", f"/doc/{folder.doc_id}/auth", {})
        return bool(minted.get("authorization") == "full")

    async def may_suggest(self) -> bool:
        """Whether a token that may not write live proposes instead (role `suggest`), as `info` says."""
        try:
            answer = await asyncio.to_thread(self.tool, "info", {})
        except ServerError:
            return False  # a server without the tool: read-only, as before
        return not answer.is_error and answer.structured.get("role") == "suggest"
