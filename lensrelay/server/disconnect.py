"""Telling an HTTP handler that its client went away, without a task parked on ASGI `receive()`.

Through plain ASGI the only way to learn that a client disconnected mid-request is to keep a second task
waiting on `receive()` for `http.disconnect`, next to the task doing the work (what Django's handler and
our lean `/mcp` handler do). For a call that takes a millisecond, those two extra tasks are a visible
share of its cost. Our launcher (`lensrelay.server.serve`) puts a `DisconnectWatch` for each HTTP request in
the scope under `extensions[DISCONNECT_WATCH]`; daphne's request reports a lost connection to it directly, and
a handler that registered a callback (typically: cancel my task) has it called then, on the event loop.
Under another ASGI server (or a test client) there is no watch and the handler listens as before.
"""

from __future__ import annotations

from collections.abc import Callable

DISCONNECT_WATCH = "lensrelay.disconnect_watch"


class DisconnectWatch:
    def __init__(self) -> None:
        self.lost = False
        self._callback: Callable[[], object] | None = None

    def on_lost(self, callback: Callable[[], object]) -> bool:
        """Call `callback` once if the connection is lost from now on; False if it already was."""
        if self.lost:
            return False
        self._callback = callback
        return True

    def clear(self) -> None:
        """The handler is done (or about to send its last bytes): a later loss concerns nobody."""
        self._callback = None

    def connection_lost(self) -> None:
        """Called by the server when the client's connection closes before the response was finished."""
        self.lost = True
        callback, self._callback = self._callback, None
        if callback is not None:
            callback()
