"""Pure text engines behind the MCP tools: no Django, no CRDTs, no HTTP; strings in, text out (an import
contract in pyproject.toml keeps it so).

`grep` the function is not re-exported here, so that `mcp_tools.engines.grep` stays the module.
"""

from lensrelay.text.frontmatter import document_stats, locate_frontmatter, split_frontmatter
from mcp_tools.engines.catn import display_line, format_read, line_count, split_lines
from mcp_tools.engines.globbing import compile_glob, glob_paths, grep_glob_filter
from mcp_tools.engines.grep import GrepError, GrepOptions, GrepResult, GrepTimeout, grep_result
from mcp_tools.engines.properties import matches_properties, validate_property_query

__all__ = [
    "GrepError",
    "GrepOptions",
    "GrepResult",
    "GrepTimeout",
    "compile_glob",
    "display_line",
    "document_stats",
    "format_read",
    "glob_paths",
    "grep_glob_filter",
    "grep_result",
    "line_count",
    "locate_frontmatter",
    "matches_properties",
    "split_frontmatter",
    "split_lines",
    "validate_property_query",
]
