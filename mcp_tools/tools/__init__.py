"""One module per tool; importing this package registers them all."""

from mcp_tools.tools import get_links, glob, grep, info, property_search, read, read_metadata

__all__ = ["get_links", "glob", "grep", "info", "property_search", "read", "read_metadata"]
