"""Requests from the server to the client (sampling, elicitation) and the replies the client posts back.

The request goes out on the SSE stream of the client's own pending request; the client answers with a
separate POST, which may reach a different worker. So the waiting side listens on a channel-layer channel
whose name is carried in the request id, and whichever worker receives the reply forwards it there.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.layers import get_channel_layer

from mcp_tools.transport.jsonrpc import RequestId

ID_PREFIX = "lr-out:"
REPLY_TYPE = "mcp.reply"
DEFAULT_TIMEOUT_SECONDS = 120.0


class ClientRequestError(Exception):
    """The client answered with an error, did not answer in time, or cannot be asked at all."""


async def open_reply_channel() -> tuple[str, str]:
    """A fresh channel to wait on, and the request id that names it."""
    layer = _layer()
    channel = await layer.new_channel(prefix="mcp-reply")
    return channel, f"{ID_PREFIX}{channel}"


async def wait_reply(
    *, channel: str, session_id: str, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> dict[str, Any]:
    """The JSON-RPC response posted for the request sent with this channel's id, from this session."""
    layer = _layer()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise ClientRequestError("The client did not answer the server's request in time.")
        try:
            event = await asyncio.wait_for(layer.receive(channel), timeout=remaining)
        except TimeoutError as exc:
            raise ClientRequestError("The client did not answer the server's request in time.") from exc
        if event.get("type") == REPLY_TYPE and event.get("session") == session_id:
            message: dict[str, Any] = event["message"]
            return message


async def deliver_reply(*, request_id: RequestId, session_id: str, message: dict[str, Any]) -> bool:
    """Forward a posted reply to whoever waits for it; False when the id is not one of ours."""
    if not isinstance(request_id, str) or not request_id.startswith(ID_PREFIX):
        return False
    channel = request_id[len(ID_PREFIX) :]
    await _layer().send(channel, {"type": REPLY_TYPE, "session": session_id, "message": message})
    return True


def _layer() -> Any:
    layer = get_channel_layer()
    if layer is None:
        raise ClientRequestError("No channel layer is configured, so the server cannot ask the client.")
    return layer
