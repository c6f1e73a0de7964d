"""Streamable HTTP transport for MCP: protocol eras, headers, JSON-RPC, dispatch and SSE framing.

`mcp_tools.endpoint` is the HTTP entry point; `handshake` and `stateless` hold the two protocol eras' rules,
`dispatch` answers the methods, `exchange` turns one answered request into a JSON or SSE response.
"""
