"""A Redis channel layer that drops a share of what it is asked to send (test configuration only).

Workers load it with `LENSRELAY_CHANNEL_LAYER_BACKEND=tests.e2e.lossy_layer.LossyRedisChannelLayer`;
`LENSRELAY_TEST_DROP_SHARE` (0..1) is the share of messages silently lost, as channels_redis itself
loses them when a channel is over capacity.
"""

from __future__ import annotations

import os
import random
from typing import Any

from channels_redis.core import RedisChannelLayer


class LossyRedisChannelLayer(RedisChannelLayer):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drop_share = float(os.environ.get("LENSRELAY_TEST_DROP_SHARE", "0.3"))

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if random.random() >= self.drop_share:
            await super().group_send(group, message)

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        if random.random() >= self.drop_share:
            await super().send(channel, message)
