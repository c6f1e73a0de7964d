"""One module per tool; importing this package registers them all. What they share is in `support`."""

from mcp_tools.tools import (
    delete,
    edit,
    get_links,
    glob,
    grep,
    info,
    list_suggestions,
    move,
    multi_edit,
    property_search,
    read,
    read_metadata,
    search,
    semantic_search,
    write,
)

__all__ = [
    "delete",
    "edit",
    "get_links",
    "glob",
    "grep",
    "info",
    "list_suggestions",
    "move",
    "multi_edit",
    "property_search",
    "read",
    "read_metadata",
    "search",
    "semantic_search",
    "write",
]
