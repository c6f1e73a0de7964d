"""Every MCP answer is encoded by `compact_json`: the standard library's compact bytes, and where orjson
refuses a value, still valid JSON that reads back as the value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lensrelay.text.compact_json import compact_json

SAMPLES: list[Any] = [
    {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "Plants make sugar 🌱"}]}},
    {"text": 'tabs\tnewlines\nquotes" backslash\\ NUL\x00 bell\x07 DEL\x7f', "nbsp": "\u00a0\u2028\u2029"},
    {"mixed": ["中文", "עברית", "e\u0301", "𝄞"], "numbers": [0, -1, 2**63 - 1, 1.5, -0.25, True, None]},
    {"nested": {"a": [{"b": [[], {}]}]}, "empty": ""},
    [],
    "just text",
]


@pytest.mark.parametrize("value", SAMPLES)
def test_the_same_bytes_as_the_standard_compact_encoding(value: Any) -> None:
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert compact_json(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"lone": "half a pair \ud83d here"},
        {"huge": 2**70},
        {1: "an integer key"},
    ],
)
def test_what_orjson_refuses_is_still_valid_json_of_the_value(value: Any) -> None:
    encoded = compact_json(value)
    assert encoded.isascii() and b"\n" not in encoded  # one SSE data line
    decoded = json.loads(encoded)
    assert decoded == json.loads(json.dumps(value))
