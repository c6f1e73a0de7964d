"""The fixtures of an in-process `/mcp` endpoint (a live store, an HTTP client, tokens, test tools), for every
test of the package (tests/mcp_tools/test_transport_support.py), and the tasks' note and reviewer
(tests/mcp_tools/tasks_support.py)."""

from tests.mcp_tools.tasks_support import leaf, rita
from tests.mcp_tools.test_transport_support import http, mcp, test_tools, tokens

__all__ = ["http", "leaf", "mcp", "rita", "test_tools", "tokens"]
