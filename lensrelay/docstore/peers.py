"""Low-latency fan-out between worker processes over the channel layer (Redis when scaled out).

The layer delivers at most once, so it only makes peers fast, never correct: every update is in the
database log first, and each process's catch-up poll applies whatever the layer dropped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer

from lensrelay.docstore.room import FOREIGN

if TYPE_CHECKING:
    from lensrelay.docstore.store import DocStore

logger = logging.getLogger(__name__)


def group_name(doc_id: str) -> str:
    return f"lensrelay.doc.{doc_id}"


class PeerBus:
    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.layer: Any = get_channel_layer()
        self.channel: str | None = None
        self._groups: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.channel is None:
            self.channel = await self.layer.new_channel()
            self._task = self.store.spawn(self._receive())

    async def join(self, doc_id: str) -> None:
        await self.start()
        assert self.channel is not None
        group = group_name(doc_id)
        if group not in self._groups:
            self._groups.add(group)
            await self.layer.group_add(group, self.channel)

    async def leave(self, doc_id: str) -> None:
        group = group_name(doc_id)
        if group in self._groups and self.channel is not None:
            self._groups.discard(group)
            await self.layer.group_discard(group, self.channel)

    async def publish(self, doc_id: str, update: bytes) -> None:
        try:
            await self.layer.group_send(
                group_name(doc_id),
                {"type": "doc.update", "doc_id": doc_id, "update": update, "writer": self.store.writer},
            )
        except Exception:
            logger.warning("could not publish an update of %s to peers; they catch up from the log", doc_id)

    async def _receive(self) -> None:
        assert self.channel is not None
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("peer channel receive failed; retrying", exc_info=True)
                await asyncio.sleep(1)
                continue
            if message.get("writer") == self.store.writer:
                continue
            room = self.store.rooms.get(message.get("doc_id", ""))
            if room is None:
                continue
            try:
                room.apply_update(message["update"], FOREIGN)
            except (KeyError, ValueError):
                logger.error("dropping a malformed peer message for %s", message.get("doc_id"))
