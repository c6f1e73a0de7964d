"""The few HTTP calls the client makes before it opens sockets: which folder, and whether the token may write.

Plain `urllib` in a worker thread: nothing to install, and two or three calls per start.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit, urlunsplit
from urllib.request import Request, urlopen

TIMEOUT = 15.0


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
        try:
            with urlopen(request, timeout=TIMEOUT) as response:
                return json.loads(response.read() or b"null")
        except HTTPError as exc:
            try:
                said = json.loads(exc.read()).get("error", "")
            except (ValueError, AttributeError):
                said = ""
            raise ServerError(f"{method} {path}: the server answered {exc.code} {said}".rstrip()) from None
        except (URLError, OSError) as exc:
            raise ServerError(f"cannot reach {self.url}: {getattr(exc, 'reason', exc)}") from None

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

    async def may_write(self, folder: Folder) -> bool:
        """Whether the token writes live (`edit`, `admin`) rather than only reads (`view`, `suggest`): the
        y-sweet auth route mints a client token of exactly the rights the token has."""
        minted = await self.call("POST", f"/doc/{folder.doc_id}/auth", {})
        return bool(minted.get("authorization") == "full")
