"""autobahn's per-connection debug line is formatted only when it is logged (lensrelay.serve)."""

from __future__ import annotations

import pprint

import pytest
from autobahn.websocket import protocol

import lensrelay.serve
from lensrelay.serve import _limited_server_class


def test_the_options_are_pretty_printed_only_when_the_debug_line_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _limited_server_class()
    printed: list[object] = []

    def counted(value: object) -> str:
        printed.append(value)
        return pprint.pformat(value)

    monkeypatch.setattr(lensrelay.serve, "pformat", counted)
    options = [("autoPingInterval", 0, "WebSocketServerFactory")]
    value = protocol.pformat(options)  # what _connectionMade hands its debug line
    assert printed == []
    # What the log line's "\n{attrs}" gives once an observer formats it: the same text as before.
    assert f"\n{value}" == "\n" + pprint.pformat(options)
    assert printed == [options]


def test_timings_still_print_as_text() -> None:
    _limited_server_class()
    timings = protocol.Timings()
    timings.track("onOpen")
    assert isinstance(str(timings), str) and "onOpen" in str(timings)
