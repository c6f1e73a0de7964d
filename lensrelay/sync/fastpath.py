"""What the sync consumer may find in its scope from a server that offers direct frames.

The launcher (`lensrelay.server.serve`) puts an object of this shape in each WebSocket scope under
`extensions[DIRECT_SEND]` (`lensrelay.server.direct.DirectSocket`, written against daphne and autobahn).
The consumer knows only this contract: under another ASGI server, or Channels' test communicator, there is
no such extension and it uses the ASGI send and receive as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

DIRECT_SEND = "lensrelay.direct_send"

# Called with each frame the client sends: (bytes, None) for a binary frame, (None, text) for text.
Receiver = Callable[[bytes | None, str | None], None]


class DirectSocket(Protocol):
    @property
    def accepted(self) -> bool:
        """Whether the server has already answered this socket's handshake."""
        ...

    def receive_directly(self, receiver: Receiver) -> bool:
        """Have the client's frames handed to `receiver` as they are read; False, and nothing changes, while
        frames received before still wait in the ASGI queue (read those first, then ask again)."""
        ...

    def stop_receiving(self) -> None: ...

    def send(self, frame: bytes) -> bool:
        """Write one binary frame now; False if the socket is not open (use the ASGI send instead)."""
        ...
