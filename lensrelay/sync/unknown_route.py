"""The socket for a WebSocket URL no route serves: accepted, then closed with 4404 and a reason.

Without it Channels' router raises for an unknown path and the handshake fails with HTTP 500 (and a
traceback in the log) on every retry; a close code in 4400-4499 tells y-websocket clients to stop.
"""

from __future__ import annotations

from channels.generic.websocket import AsyncWebsocketConsumer

from lensrelay.sync.consumer import CLOSE_UNKNOWN_DOC


class UnknownRouteConsumer(AsyncWebsocketConsumer):
    channel_layer_alias = "lensrelay.unknown-route-uses-no-layer"

    async def connect(self) -> None:
        await self.accept()
        path = str(self.scope.get("path", ""))[:60]
        await self.close(
            code=CLOSE_UNKNOWN_DOC,
            reason=f"no socket route {path}: use /d/<id>/ws/<id>",
        )
