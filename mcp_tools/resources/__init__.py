"""MCP resources.

- `providers`: the provider registry the transport pages through and asks to read URIs.
- `documents`: the knowledge base's documents as `lens://` resources.
"""
