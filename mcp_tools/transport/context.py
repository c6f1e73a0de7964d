"""Everything a method handler knows about the request it answers, and how it talks back mid-request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest

from lensrelay.access.auth import Access
from lensrelay.access.oauth import public_base
from lensrelay.text.names import CLIENT_NAME_LIMIT, clean_name
from mcp_tools.callers.sessions import LOG_LEVELS, stateless_session_key
from mcp_tools.models import McpSession
from mcp_tools.registry import ToolContext
from mcp_tools.transport import outbound
from mcp_tools.transport.exchange import Outbox
from mcp_tools.transport.jsonrpc import RequestId
from mcp_tools.transport.outbound import ClientRequestError

Era = Literal["handshake", "stateless"]


def address_of(request: HttpRequest) -> str | None:
    """This server's address as the request reached it (LENSRELAY_PUBLIC_URL when set), or None when the
    request names a host ALLOWED_HOSTS refuses: a forged Host header never reaches a link."""
    try:
        return public_base(request)
    except DisallowedHost:
        return None


@dataclass
class CallScope:
    """One request being answered: who asks, in which protocol era and version, and its response stream.

    Rich tools (the conformance fixtures) receive it directly; registry tools receive it as
    `ToolContext.extra["mcp"]` and may use `log` and `progress`.
    """

    era: Era
    protocol_version: str
    access: Access
    request_id: RequestId
    outbox: Outbox
    session: McpSession | None = None
    client_info: dict[str, Any] = field(default_factory=dict)
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    # The least severe level the client wants log messages for; None: it wants none.
    log_level: str | None = None
    progress_token: str | int | None = None
    public_base: str | None = None

    @property
    def client_name(self) -> str:
        name = self.client_info.get("name", "")
        # The client names itself: one safe, bounded line, the same in its suggestions, presence and history.
        return clean_name(name, limit=CLIENT_NAME_LIMIT) if isinstance(name, str) else ""

    @property
    def session_key(self) -> str:
        if self.session is not None:
            return self.session.id
        return stateless_session_key(token_id=self.access.token_id, client_name=self.client_name)

    def tool_context(self) -> ToolContext:
        return ToolContext(
            access=self.access,
            session_key=self.session_key,
            client_name=self.client_name,
            session_id=self.session.id if self.session is not None else None,
            public_base=self.public_base,
            extra={"mcp": self},
        )

    # ------------------------------------------------------------------ notifications on this request

    def wants_log(self, level: str) -> bool:
        if self.log_level is None or level not in LOG_LEVELS:
            return False
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)

    def log(self, level: str, data: Any, *, logger: str | None = None) -> bool:
        """Send `notifications/message` if the client asked for this level; True if it was sent."""
        if not self.wants_log(level):
            return False
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        return self.outbox.send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send `notifications/progress` if the request carried a progress token."""
        if self.progress_token is None:
            return False
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self.outbox.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    # ------------------------------------------------------------------ requests to the client

    def client_supports(self, capability: str) -> bool:
        return isinstance(self.client_capabilities.get(capability), dict)

    async def ask_client(
        self, method: str, params: dict[str, Any], *, timeout: float = outbound.DEFAULT_TIMEOUT_SECONDS
    ) -> dict[str, Any]:
        """Send a request to the client on this request's stream and wait for its result.

        Raises ClientRequestError when that is impossible (stateless era, no SSE, no session) or the client
        answers with an error.
        """
        if self.era != "handshake" or self.session is None:
            raise ClientRequestError(
                f"The server cannot send {method} requests in protocol {self.protocol_version}."
            )
        if not self.outbox.streaming:
            raise ClientRequestError(
                f"The server cannot send {method}: the client does not accept text/event-stream responses."
            )
        channel, request_id = await outbound.open_reply_channel()
        self.outbox.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        reply = await outbound.wait_reply(channel=channel, session_id=self.session.id, timeout=timeout)
        if "error" in reply:
            error = reply.get("error") or {}
            raise ClientRequestError(
                f"The client refused {method}: {error.get('message', 'no reason given')}"
            )
        result = reply.get("result")
        return result if isinstance(result, dict) else {}
