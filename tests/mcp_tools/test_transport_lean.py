"""The lean /mcp handler's own pieces (mcp_tools.transport.lean)."""

from __future__ import annotations

from typing import Any

from django.core.signals import request_finished
from django.http import HttpResponse, StreamingHttpResponse

from mcp_tools.transport.lean import _close


class Closable:
    def __init__(self) -> None:
        self.closed = 0

    def __iter__(self) -> Any:
        yield b"x"

    def close(self) -> None:
        self.closed += 1


def test_closing_runs_the_bodys_closers_once_and_sends_no_request_signal() -> None:
    body = Closable()
    response = StreamingHttpResponse(body)
    finished: list[object] = []

    def receiver(**kwargs: Any) -> None:
        finished.append(kwargs.get("sender"))

    request_finished.connect(receiver)
    try:
        _close(response)
        _close(response)
    finally:
        request_finished.disconnect(receiver)
    assert body.closed == 1
    assert response.closed
    assert finished == []


def test_a_failing_closer_does_not_stop_the_others() -> None:
    response = HttpResponse(b"{}")
    calls: list[str] = []

    def broken() -> None:
        calls.append("broken")
        raise RuntimeError("closing failed")

    response._resource_closers.extend([broken, lambda: calls.append("fine")])  # type: ignore[attr-defined]
    _close(response)
    assert calls == ["broken", "fine"]
