"""What the event log holds for one session: the params of its messages of one method, oldest first."""

from __future__ import annotations

from typing import Any

from mcp_tools.models import McpEvent


def logged_params(session_id: str, method: str) -> list[dict[str, Any]]:
    return [
        message["params"]
        for message in McpEvent.objects.filter(session_id=session_id)
        .order_by("seq")
        .values_list("message", flat=True)
        if message.get("method") == method
    ]
