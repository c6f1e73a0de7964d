"""Icons for the tools (`Tool.icons`, MCP 2025-11-25 and later), so a client's tool list shows at a glance
what reads, what proposes a change a person decides, and what discusses a passage.

Data URIs rather than URLs: a tool list is answered before anyone knows the address the client reached the
server by, and a client shows them without a request of its own (the spec allows both).
"""

from __future__ import annotations

import base64
from functools import cache
from typing import Any

# Protocol versions whose `Tool` has `icons`.
ICON_VERSIONS = frozenset({"2025-11-25", "2026-07-28"})

# 24 by 24, one stroke colour: a page with lines (reads), a page with a pencil (proposes), a speech bubble.
_SVG = {
    "read": ('<path d="M6 3h9l4 4v14H6z"/><path d="M9 11h7M9 14h7M9 17h5"/>'),
    "suggest": ('<path d="M6 3h9l4 4v6"/><path d="M6 3v18h7"/><path d="M14 21l1-4 5-5 3 3-5 5z"/>'),
    "discuss": ('<path d="M4 5h16v11H9l-5 4z"/><path d="M8 9h8M8 12h5"/>'),
}
_DISCUSS = frozenset({"comment", "reply", "list_threads", "resolve_thread"})


@cache
def _icon(kind: str) -> dict[str, Any]:
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="#417690" '
        f'stroke-width="1.8" stroke-linejoin="round" stroke-linecap="round">{_SVG[kind]}</svg>'
    )
    data = base64.b64encode(svg.encode()).decode()
    return {"src": f"data:image/svg+xml;base64,{data}", "mimeType": "image/svg+xml", "sizes": ["any"]}


def tool_icons(*, name: str, read_only: bool) -> list[dict[str, Any]]:
    kind = "discuss" if name in _DISCUSS else "read" if read_only else "suggest"
    return [_icon(kind)]
