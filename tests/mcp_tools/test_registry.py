"""The tool registry: definitions are built once per model and handed out as copies."""

from __future__ import annotations

import mcp_tools.tools  # noqa: F401  (registers every tool)
from mcp_tools.registry import REGISTRY


def test_each_definition_is_a_fresh_copy_of_one_schema_built_once() -> None:
    tool = REGISTRY["read"]
    first = tool.definition("2025-11-25")
    first["inputSchema"]["properties"].clear()  # a caller that changes what it was given
    first["outputSchema"] = {"spoiled": True}
    again = tool.definition("2025-11-25")
    assert set(again["inputSchema"]["properties"]) == {"file_path", "offset", "limit"}
    assert again["inputSchema"]["additionalProperties"] is False
    assert "title" not in again["inputSchema"]
    structured = REGISTRY["info"].definition("2025-11-25")
    structured["outputSchema"]["properties"].clear()
    assert REGISTRY["info"].definition("2025-11-25")["outputSchema"]["properties"]
